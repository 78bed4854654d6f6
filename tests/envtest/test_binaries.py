"""Where the control-plane binaries come from, and the reasons given when they are missing."""

import pytest

from phalanx.envtest import binaries
from phalanx.envtest.binaries import BinariesNotFound, find_binaries


def test_kubebuilder_assets_must_hold_etcd_and_kube_apiserver(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    monkeypatch.setattr(binaries, "_etcd_from_packages", lambda: None)
    with pytest.raises(BinariesNotFound, match="etcd, kube-apiserver not found"):
        find_binaries()
    for name in ("etcd", "kube-apiserver", "kubectl"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    found = find_binaries()
    assert (found.etcd, found.kubectl) == (tmp_path / "etcd", tmp_path / "kubectl")
    assert found.kube_scheduler is None
    with pytest.raises(BinariesNotFound, match="kube-scheduler is not in"):
        found.require("kube-scheduler")


def test_without_assets_or_archive_the_reason_names_both(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("PHALANX_KUBE_ARCHIVE", str(tmp_path / "nowhere"))
    with pytest.raises(BinariesNotFound, match="KUBEBUILDER_ASSETS.*shared/kube"):
        find_binaries()


def test_the_archive_is_unpacked_by_its_install_script(tmp_path, monkeypatch):
    archive = tmp_path / "kube"
    archive.mkdir()
    (archive / "install.sh").write_text(
        '#!/bin/sh\nmkdir -p "$1"\nfor b in kube-apiserver kube-scheduler; do\n'
        '  printf "#!/bin/sh\\n" > "$1/$b"; chmod +x "$1/$b"; done\necho "$1"\n')
    etcd = tmp_path / "etcd"
    etcd.write_text("#!/bin/sh\n")
    etcd.chmod(0o755)
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("PHALANX_KUBE_ARCHIVE", str(archive))
    monkeypatch.setenv("PHALANX_KUBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(binaries, "_etcd_from_packages", lambda: etcd)
    found = find_binaries()
    assert found.kube_apiserver == tmp_path / "cache" / "kube-apiserver"
    assert found.etcd == etcd and found.kube_scheduler is not None

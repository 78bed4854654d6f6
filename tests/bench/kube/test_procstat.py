from phalanx.bench.kube import procstat


def _stat(pid, ppid, utime, stime, cutime=0, cstime=0, comm="python3"):
    # Fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    # utime stime cutime cstime ...
    return (f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 "
            f"{utime} {stime} {cutime} {cstime} 20 0 3 0 12345 1000000 500\n")


def test_parse_stat_counts_fields_after_the_command_name():
    text = _stat(42, 1, 150, 50, 7, 3, comm="weird (name) x")
    assert procstat.parse_stat(text) == (42, 1, 150, 50, 7, 3)


def _fake_proc(tmp_path, stats):
    for pid, text in stats.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(text)
    (tmp_path / "self").mkdir()  # not a pid: ignored
    return tmp_path


def test_cpu_seconds_include_live_descendants_and_reaped_children(tmp_path):
    ticks = procstat._TICKS
    proc = _fake_proc(tmp_path, {
        100: _stat(100, 1, 2 * ticks, ticks, cutime=ticks, cstime=0),  # 3 s own, 1 s reaped
        101: _stat(101, 100, ticks, 0),                               # child: 1 s
        102: _stat(102, 101, 0, ticks),                               # grandchild: 1 s
        200: _stat(200, 1, 50 * ticks, 0),                            # unrelated
    })
    assert sorted(procstat.descendants(100, proc)) == [101, 102]
    assert procstat.cpu_seconds(100, proc) == 6.0
    assert procstat.cpu_times(100, proc) == (4.0, 2.0)
    assert procstat.cpu_seconds(999, proc) == 0.0


def test_peak_rss(tmp_path):
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "status").write_text("Name:\tx\nVmHWM:\t  204800 kB\nVmRSS:\t 1000 kB\n")
    assert procstat.peak_rss_mb(7, tmp_path) == 200.0
    assert procstat.peak_rss_mb(8, tmp_path) == 0.0


def test_machine_busy_seconds_leave_idle_and_iowait_out(tmp_path):
    ticks = procstat._TICKS
    # cpu  user nice system idle iowait irq softirq steal guest guest_nice
    (tmp_path / "stat").write_text(
        f"cpu  {5 * ticks} {ticks} {2 * ticks} {100 * ticks} {7 * ticks} 0 {ticks} 0 "
        f"{3 * ticks} 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n")
    assert procstat.machine_busy_seconds(tmp_path) == 9.0
    assert procstat.machine_busy_seconds(tmp_path / "absent") == 0.0
    assert procstat.machine_busy_seconds() > 0  # this machine's own /proc/stat

"""`phalanx bench grove-scale`: Grove's operator scale tests on a real kube-apiserver, each
beside the floor (the same pod creates and binds by a minimal client, in the same run).

scenarios.py (Grove's scenarios and YAML), runner.py (the stack and the phases), floor.py,
checks.py (Grove's final checks), soak.py (SoakChurn and its leak samples), cli.py.
"""

"""Dynamic Resource Allocation in the scheduler (structured parameters).

pools.py      resource pools as one node sees them (generations, completeness, validity)
allocator.py  the structured allocator (kube's stable allocator: ExactCount/All, selectors,
              matchAttribute, firstAvailable, admin access, taints, shared counters)
inventory.py  every published device as NumPy columns (node row, class/selector masks,
              in use), for vectorised Filter checks over thousands of nodes
tracker.py    claims, classes and slices from the informers, plus what this scheduler has
              assumed (in-flight allocations, written claims not yet seen back)
gangplan.py   whole-gang device placement: members' claims allocated jointly per node
"""

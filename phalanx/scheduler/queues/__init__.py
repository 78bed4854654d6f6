"""KAI's queues in the scheduler: hierarchy, quotas, limits, fair share and reclaim.

    share.py       per-queue, per-resource numbers (deserved, fair share, allocated, ...)
    division.py    fair share: deserved quota first, then over-quota weight by priority
    order.py       which queue goes first (fair share, quota, priority, DRF)
    rules.py       capacity (limit, non-preemptible quota) and reclaim rules
    minruntime.py  how long a job runs before it may be preempted or reclaimed
    usage.py       time-based fair share: past usage over capacity
    tree.py        Queue objects -> the tree of shares, amounts summed up the tree
    ledger.py      what each queue holds and asks for, per pod
    jobs.py        what a job (a gang's pending minimum) still needs
    runtime.py     the scheduler-wide state: informers, ledger, shares on demand
    status.py      Queue status and the fair-share annotation
    settings.py    the plugins' arguments

The plugins are phalanx/scheduler/plugins/queuecapacity.py (PreFilter, Reserve, the queue
order) and queuereclaim.py (PostFilter). Semantics follow NVIDIA KAI-Scheduler's
proportion, minruntime plugins and reclaim action (docs/queues, docs/fairness).
"""

"""The fast path: how a cycle decides a pod on every node without evaluating every rule at
every node for every pod. This docstring is its map.

A cycle (``engine.cycle.schedule``) runs a full pass, else an incremental one, then chooses.
What makes both cheap lives here and in the layers below:

- **Rules over all nodes at once** (``lang/vector.py``, ``lang/evaluators.py``,
  ``schedlib/batch.py``, ``schedlib/storage_batch.py``). The planner gives most rules a batch
  form that reads a column per node-varying root and returns one verdict or raw score per
  node row.
- **Share keys** (``sharekeys``, ``lang/reads.py``). A rule's per-node results are keyed by
  what it reads of the pod: the ``pod.*`` attributes it names (or the map entries), each pod-
  reading builtin's ``pod_key``, a pod-only ``let`` by its value; a rule that reads the pod in
  a way this cannot describe is keyed by the pod's whole class. So NodeResourcesFit is computed
  once per distinct request, the GPU-model filter once per model.
- **Columns** (``columns``). One rule's results per node row, valid while the snapshot holds
  the very ``NodeInfo`` (or, for rules reading only the Node object, the very Node object) and
  the rule's cluster keys compare equal. Row-keyed cluster state (``schedlib/rowkeys.py``,
  ``schedlib/domains.py``) lets spread and inter-pod affinity invalidate only the rows whose
  domain counts moved.
- **The class store** (``classes``). ``ClassCache`` keeps recent columns (least recently used
  dropped first), the whole-cycle state of each pod class, and the share keys computed once per
  class. It is an object its owner holds — a simulation, a scheduler, an extender, a test — and
  passes in ``CycleOptions.cache``; there is no process-wide cache.
- **The governing policy per class** (``governors``). The profile's ``match`` expressions are
  evaluated for a class's first pod only, when they read nothing its pods do not share.
- **Node frames** (``nodeviews``). A numbered frame per snapshot: the node views in row order
  and a log of the rows each assume step replaced, which the incremental pass reads to know
  what changed since a class's last cycle.
- **The incremental pass** (in ``engine.cycle``). A class's next pod starts from its last
  cycle: first rejections, feasible set, totals and each score rule's normalisation facts;
  only the changed rows are examined again, a rule is renormalised over every row only when its
  facts moved, and the best rows are found without sorting. Anything it relies on having moved
  (a column replaced, a key changed, an error, a log that does not reach back, too many changed
  rows) sends the cycle back to a full pass.
- **Rules decided by their row key** (``rowgroups``). A rule reading the node only through
  ``row_determined`` builtins (spread, inter-pod affinity filters) is evaluated once per
  distinct row key, its verdict copied to the other rows. Likewise a rule reading the node
  only through builtins that say which nodes they tell apart (``looked_at``: every kube
  filter, for a pod whose required node affinity names its nodes, as a DaemonSet's does) is
  evaluated on those nodes and one other, whose verdict the rest share.
- **Rules a pod leaves idle** (``idle``). A rule whose guard is false from the pod alone, or
  whose builtin declares itself idle for the pod (where kube-scheduler's PreFilter or PreScore
  skips the plugin), is left out of the cycle's plan and listed back with a normalised 0.

The reference evaluator (``lang/reference.py``, ``engine/reference_cycle.py``) shares none of
this (import contracts hold it so), nor the sums and row maps the builtins keep across cycles
(each reference decision runs with them fresh: ``schedlib.kept``), and the property tests in
``tests/engine`` hold every decision of the fast path equal to the reference's over walks of
pods through changing snapshots.
"""

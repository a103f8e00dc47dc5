"""The bundle (SPEC §7 eval, §7b perf): one package owns its paths, manifest and files.

* :class:`Layout` — every path of a bundle folder (:class:`ShardFolder`: the shard folders);
* :class:`Manifest` — ``bundle.json`` typed (its parts :class:`HostFacts`, :class:`ModelEntry`,
  :class:`PointEntry`, :class:`PerfSettings` …), with :meth:`Bundle.edit_manifest` the one way
  to change it (read, modify, atomic write);
* :class:`Bundle` — create / open / resume checks / run state of a folder;
* :class:`ResponseShards` — response shards: append, scan with torn-tail repair and
  de-duplication, :meth:`~ResponseShards.unfinalized_keys`, the finalize rewrite;
* :func:`read_host_samples`, :func:`read_events` — the host-sample and event-log readers;
* :class:`JudgeFiles` — a judge's verdicts, holistic reports and calibration verdicts, read
  typed (:class:`StoredVerdict`, :class:`StoredReport`) and "last record wins"
  (:func:`last_by_key`, :func:`last_by_row`), with the cache fields stored beside each record
  (:class:`CacheFields`, :func:`is_current`).
"""

from touchstone_ray.bundle._folder import (
    GENERATION_FIELDS,
    SECRET_HINTS,
    STALE_AFTER_S,
    Bundle,
    find_bundles,
    frozen_config,
    new_bundle_root,
    redact,
    running_manifest,
)
from touchstone_ray.bundle._hosts import read_events, read_host_samples
from touchstone_ray.bundle._judgements import (
    TEMPLATE_VERSION,
    CacheFields,
    JudgeFiles,
    StoredReport,
    StoredVerdict,
    current_of,
    history_by_key,
    history_by_row,
    is_current,
    judge_ids,
    last_by_key,
    last_by_row,
    read_stored,
    record_extras,
)
from touchstone_ray.bundle._layout import JUDGE_ID_PATTERN, LIVE_FILES, Layout, ShardFolder
from touchstone_ray.bundle._manifest import (
    AgentEntry,
    ContextChoice,
    EmbedSettings,
    EngineFound,
    Footprint,
    HostFacts,
    HostGpu,
    Manifest,
    ModelEntry,
    PackRef,
    PerfSettings,
    PointEntry,
    RayInfo,
    ServerEntry,
    TemplateCheck,
    WarmupProbe,
    edit_manifest,
    read_manifest,
    write_manifest,
)
from touchstone_ray.bundle._responses import ResponseScan, ResponseShards, is_unfinalized

__all__ = [
    "GENERATION_FIELDS",
    "JUDGE_ID_PATTERN",
    "LIVE_FILES",
    "SECRET_HINTS",
    "STALE_AFTER_S",
    "TEMPLATE_VERSION",
    "AgentEntry",
    "Bundle",
    "CacheFields",
    "ContextChoice",
    "EmbedSettings",
    "EngineFound",
    "Footprint",
    "HostFacts",
    "HostGpu",
    "JudgeFiles",
    "Layout",
    "Manifest",
    "ModelEntry",
    "PackRef",
    "PerfSettings",
    "PointEntry",
    "RayInfo",
    "ResponseScan",
    "ResponseShards",
    "ServerEntry",
    "ShardFolder",
    "StoredReport",
    "StoredVerdict",
    "TemplateCheck",
    "WarmupProbe",
    "current_of",
    "edit_manifest",
    "find_bundles",
    "frozen_config",
    "history_by_key",
    "history_by_row",
    "is_current",
    "is_unfinalized",
    "judge_ids",
    "last_by_key",
    "last_by_row",
    "new_bundle_root",
    "read_events",
    "read_host_samples",
    "read_manifest",
    "read_stored",
    "record_extras",
    "redact",
    "running_manifest",
    "write_manifest",
]

"""Inter-pod affinity terms compiled once per pod: which namespaces, which labels, which topology.

A term selects pods in ``namespaces``, or in namespaces matched by ``namespaceSelector`` (an
empty selector means every namespace, a missing one none); with neither, the pod's own
namespace. A missing ``labelSelector`` matches no pod. ``matchLabelKeys``/``mismatchLabelKeys``
(GA path since 1.31: the API server merges them at creation) add ``key In/NotIn [own value]``
for the keys the pod carries; merging again here is idempotent, so pods written by hand and pods
read back from a server behave the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyengine.model.labels import (
    IN,
    NOT_IN,
    Selector,
    compile_selector_or_nothing,
    label_set_requirements,
)
from policyengine.model.objects import Pod, PodAffinityTerm


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    topology_key: str

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str]) -> bool:
        """Whether ``pod`` (whose namespace carries ``namespace_labels``) is selected."""
        if pod.namespace not in self.namespaces and not self.namespace_selector.matches(
            namespace_labels
        ):
            return False
        return self.selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


NO_TERMS = PodAffinityTerms()


def compile_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    selector = compile_selector_or_nothing(term.label_selector)
    if term.label_selector is not None:
        match = {k: pod.labels[k] for k in term.match_label_keys if k in pod.labels}
        mismatch = {k: pod.labels[k] for k in term.mismatch_label_keys if k in pod.labels}
        selector = selector.with_requirements(
            label_set_requirements(match, IN) + label_set_requirements(mismatch, NOT_IN)
        )
    return AffinityTerm(
        namespaces=namespaces,
        namespace_selector=compile_selector_or_nothing(term.namespace_selector),
        selector=selector,
        topology_key=term.topology_key,
    )


def compile_pod_affinity(pod: Pod) -> PodAffinityTerms:
    """The compiled (anti-)affinity terms of ``pod``; ``NO_TERMS`` when it has none."""
    pa = pod.pod_affinity
    paa = pod.pod_anti_affinity
    if pa is None and paa is None:
        return NO_TERMS
    return PodAffinityTerms(
        required_affinity=tuple(compile_term(pod, t) for t in pa.required) if pa else (),
        required_anti_affinity=tuple(compile_term(pod, t) for t in paa.required) if paa else (),
        preferred_affinity=tuple(
            WeightedAffinityTerm(compile_term(pod, w.term), w.weight) for w in pa.preferred
        )
        if pa
        else (),
        preferred_anti_affinity=tuple(
            WeightedAffinityTerm(compile_term(pod, w.term), w.weight) for w in paa.preferred
        )
        if paa
        else (),
    )


def matches_all(
    terms: tuple[AffinityTerm, ...], pod: Pod, namespace_labels: Mapping[str, str]
) -> bool:
    """kube's ``podMatchesAllAffinityTerms``: false for no terms."""
    if not terms:
        return False
    return all(t.matches(pod, namespace_labels) for t in terms)

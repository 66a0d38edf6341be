"""services.acl_cache on the in-memory store and a manual clock: what a lookup answers, when it
reads the store, and what that costs."""

from __future__ import annotations

from collections import Counter

import pytest

from objectlog.clock import ManualClock
from objectlog.errors import StorageUnavailable
from objectlog.format.acls import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.services.acl_cache import REFRESH_S, AclCache
from objectlog.services.authorization import matches
from objectlog.stores.acls import Matcher
from objectlog.stores.memory_acls import MemoryAclStore

T, G = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
RELOAD = Counter(GetItem=2, BatchGetItem=1)  # the version, the registry, the resources
CHECK = Counter(GetItem=1)  # the version alone


def acl(
    name: str, pattern: PatternType = LIT, resource_type: ResourceType = T, who: str = "alice"
) -> AclBinding:
    return AclBinding(
        resource_type, name, pattern, f"User:{who}", "*", Operation.READ, Permission.ALLOW
    )


class FlakyStore(MemoryAclStore):
    """The memory store, unreachable while ``down`` (as DynamoDB throttling for long); a
    change ``racing`` lands just after the next listing has read the bindings."""

    down = False
    racing: AclBinding | None = None

    def version(self) -> int:
        if self.down:
            raise StorageUnavailable("GetItem ACL version: throttled")
        return super().version()

    def list(
        self, filter: AclFilter | None = None, matches: Matcher | None = None
    ) -> list[AclBinding]:
        listed = super().list(filter, matches)
        if self.racing is not None:
            self.create([self.racing])
            self.racing = None
        return listed


@pytest.fixture
def store() -> FlakyStore:
    return FlakyStore()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def spent(store: MemoryAclStore) -> Counter[str]:
    """The requests since the last call."""
    sent = Counter(store.requests)
    store.requests.clear()
    return sent


def test_a_lookup_answers_the_literal_the_wildcard_and_the_prefixes_of_a_name(
    store: FlakyStore, clock: ManualClock
) -> None:
    bindings = [
        acl("orders"),
        acl("orders", who="bob"),
        acl("*"),
        acl("o", PRE),
        acl("orders.", PRE),
        acl("orders.eu", PRE),  # longer than "orders": not a prefix of it
        acl("ord", PRE, who="bob"),
        acl("orders", resource_type=G),  # another type
        acl("x", PRE),
    ]
    store.create(bindings)
    cache = AclCache(store, clock)
    assert set(cache.bindings_for(T, "orders")) == set(bindings[:4] + bindings[6:7])
    assert set(cache.bindings_for(T, "orders.eu.1")) == {
        bindings[2],
        *bindings[3:7],
    }
    assert cache.bindings_for(T, "zeta") == (bindings[2],)  # the wildcard alone
    assert cache.bindings_for(T, "*") == (bindings[2],)  # once, not twice
    assert cache.bindings_for(G, "orders") == (bindings[7],)
    assert cache.bindings_for(G, "other") == ()  # no ACL found
    assert cache.bindings_for(ResourceType.TRANSACTIONAL_ID, "app") == ()
    assert cache.bindings_of_type(T) == tuple(sorted(b for b in bindings if b.resource_type is T))
    assert cache.bindings_of_type(ResourceType.CLUSTER) == ()


def test_a_lookup_answers_what_describe_acls_match_filter_selects(
    store: FlakyStore, clock: ManualClock
) -> None:
    """The index against the rules' own filter (services.authorization.matches, Kafka's MATCH
    pattern: the bindings that would apply to the named resource), name by name."""
    names = ["orders", "orders.eu", "orders.eu.1", "ord", "o", "x", "*", "billing"]
    store.create(
        [acl(n, p, t) for n in names for p in (LIT, PRE) for t in (T, G) if (n, p) != ("*", PRE)]
    )
    cache = AclCache(store, clock)
    for t in (T, G):
        for name in [*names, "orders.", "zeta", "orders.eu.10"]:
            match = AclFilter(t, name, PatternType.MATCH)
            assert sorted(cache.bindings_for(t, name)) == store.list(match, matches), (t, name)


def test_no_store_read_before_refresh_s_one_version_read_after_and_a_reload_only_on_a_change(
    store: FlakyStore, clock: ManualClock
) -> None:
    store.create([acl("orders")])
    cache = AclCache(store, clock, refresh_s=5)
    spent(store)
    assert cache.bindings_for(T, "orders") == (acl("orders"),)
    assert spent(store) == RELOAD  # the first lookup loads
    store.create([acl("orders", who="bob")])  # through another agent
    spent(store)
    for _ in range(1000):
        clock.advance(4)
        assert cache.bindings_for(T, "orders") == (acl("orders"),)  # stale within refresh_s
    assert spent(store) == Counter()
    clock.advance(1_000)  # 5 s since the load
    assert set(cache.bindings_for(T, "orders")) == {acl("orders"), acl("orders", who="bob")}
    assert spent(store) == RELOAD
    clock.advance(5_000)
    cache.bindings_for(T, "orders")
    assert spent(store) == CHECK  # no change: the version alone
    store.delete([AclFilter()], lambda f, b: True)
    clock.advance(5_000)
    assert cache.bindings_for(T, "orders") == ()
    assert (cache.checks, cache.reloads) == (4, 3)


def test_the_process_that_changed_the_acls_sees_them_at_its_next_lookup(
    store: FlakyStore, clock: ManualClock
) -> None:
    cache = AclCache(store, clock)
    assert cache.bindings_for(T, "orders") == ()
    store.create([acl("orders")])
    cache.invalidate()
    assert cache.bindings_for(T, "orders") == (acl("orders"),)
    assert cache.reloads == 2


def test_steady_state_costs_one_version_read_per_refresh_and_nothing_per_request(
    store: FlakyStore, clock: ManualClock
) -> None:
    """An hour of lookups every 100 ms with no change: 720 reads of the version item, the
    figure the module docstring prices ($0.065 a process a month at 5 s)."""
    store.create([acl("orders"), acl("orders.", PRE)])
    cache = AclCache(store, clock)
    cache.bindings_for(T, "orders")
    spent(store)
    for _ in range(36_000):
        clock.advance(100)
        cache.bindings_for(T, "orders.eu")
    assert spent(store) == Counter(GetItem=3600 // int(REFRESH_S))
    assert cache.reloads == 1
    reads_a_month = 30 * 86_400 / REFRESH_S
    assert round(reads_a_month * 0.125 / 1e6, 3) == 0.065


def test_refresh_if_due_says_whether_it_reloaded(store: FlakyStore, clock: ManualClock) -> None:
    cache = AclCache(store, clock)
    assert cache.refresh_if_due()  # the first load
    assert not cache.refresh_if_due()  # not due
    store.create([acl("orders")])
    clock.advance(5_000)
    assert cache.refresh_if_due()
    clock.advance(5_000)
    assert not cache.refresh_if_due()  # checked, unchanged


def test_an_unreachable_store_keeps_the_bindings_held_and_the_first_load_raises(
    store: FlakyStore, clock: ManualClock
) -> None:
    store.create([acl("orders")])
    cache = AclCache(store, clock)
    store.down = True
    with pytest.raises(StorageUnavailable):
        cache.bindings_for(T, "orders")
    store.down = False
    assert cache.bindings_for(T, "orders") == (acl("orders"),)  # the first load, retried at once
    store.down = True
    clock.advance(5_000)
    assert cache.bindings_for(T, "orders") == (acl("orders"),)  # kept, a warning logged
    checks = cache.checks
    assert cache.bindings_for(T, "orders") == (acl("orders"),)
    assert cache.checks == checks  # not retried per request: after refresh_s
    store.down = False
    store.create([acl("orders", who="bob")])
    clock.advance(5_000)
    assert len(cache.bindings_for(T, "orders")) == 2


def test_a_change_landing_during_a_reload_is_seen_at_the_next_check(
    store: FlakyStore, clock: ManualClock
) -> None:
    """The version is read before the bindings: read after, it would already count the change
    the listing missed, and no later check would reload."""
    cache = AclCache(store, clock)
    store.racing = acl("orders")
    assert cache.bindings_for(T, "orders") == ()  # listed before the change landed
    clock.advance(5_000)
    assert cache.bindings_for(T, "orders") == (acl("orders"),)


def test_a_clock_set_back_does_not_stop_the_checks(store: FlakyStore, clock: ManualClock) -> None:
    cache = AclCache(store, clock)
    cache.bindings_for(T, "orders")
    clock.advance(-3_600_000)
    store.create([acl("orders")])
    assert cache.bindings_for(T, "orders") == (acl("orders"),)
    assert cache.reloads == 2


def test_a_negative_refresh_is_refused(store: FlakyStore, clock: ManualClock) -> None:
    with pytest.raises(ValueError, match="negative"):
        AclCache(store, clock, refresh_s=-1)

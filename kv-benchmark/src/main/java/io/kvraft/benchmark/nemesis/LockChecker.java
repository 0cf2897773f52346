package io.kvraft.benchmark.nemesis;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Checks what the lock workload saw: two holders' holds of one key may overlap by at most the
 * documented clock bound; a key's fencing tokens, in the order the holdings began, strictly increase
 * (so none repeats or goes down), except that a holder may re-enter its own holding under the same
 * token; no number of a sequence is handed out twice.
 */
final class LockChecker {

    /** The bound the README documents for holds overlapping: clock rate error times a lease, and reaction time. */
    static final long OVERLAP_BOUND_NANOS = 50_000_000L;

    /**
     * One holding by one client, on its monotonic clock: from the moment the acquire completed to the last
     * moment the holder acted on it (its last check that it still held the lock).
     */
    record Hold(String key, String holder, long token, long startNanos, long lastActNanos, boolean lost) {
    }

    /** Numbers [start, end) one call got from a sequence. */
    record Range(long start, long end) {
    }

    record Result(int holds, int expiries, int steals, int ranges, List<String> violations) {
        boolean ok() {
            return violations.isEmpty();
        }
    }

    private LockChecker() {
    }

    static Result check(List<Hold> holds, List<Range> ranges) {
        List<String> violations = new ArrayList<>();
        Map<String, List<Hold>> byKey = new HashMap<>();
        int expiries = 0;
        for (Hold h : holds) {
            byKey.computeIfAbsent(h.key(), k -> new ArrayList<>()).add(h);
            if (h.lost()) {
                expiries++;
            }
        }
        int steals = 0;
        for (List<Hold> list : byKey.values()) {
            list.sort(Comparator.comparingLong(Hold::startNanos));
            for (int i = 0; i < list.size(); i++) {
                Hold h = list.get(i);
                if (i > 0) {
                    Hold before = list.get(i - 1);
                    // the same holder again under the same token re-entered a holding that an unlock whose outcome
                    // was unknown left on the servers: legitimate, and not a new holding
                    boolean reentered = h.token() == before.token() && h.holder().equals(before.holder());
                    if (h.token() < before.token() || (h.token() == before.token() && !reentered)) {
                        violations.add(String.format("key %s: token %d of %s after token %d of %s", h.key(), h.token(),
                                h.holder(), before.token(), before.holder()));
                    }
                    if (before.lost() && !before.holder().equals(h.holder())) {
                        steals++;
                    }
                }
                for (int j = i + 1; j < list.size() && list.get(j).startNanos() <= h.lastActNanos(); j++) {
                    Hold other = list.get(j);
                    long overlap = Math.min(h.lastActNanos(), other.lastActNanos()) - other.startNanos();
                    if (overlap > OVERLAP_BOUND_NANOS) {
                        violations.add(String.format("key %s: %s (token %d) and %s (token %d) held it together for %.1f ms",
                                h.key(), h.holder(), h.token(), other.holder(), other.token(), overlap / 1e6));
                    }
                }
            }
        }
        List<Range> sorted = new ArrayList<>(ranges);
        sorted.sort(Comparator.comparingLong(Range::start));
        for (int i = 1; i < sorted.size(); i++) {
            if (sorted.get(i).start() < sorted.get(i - 1).end()) {
                violations.add("sequence range " + sorted.get(i) + " overlaps " + sorted.get(i - 1));
            }
        }
        return new Result(holds.size(), expiries, steals, ranges.size(), violations);
    }

    static String text(Result r) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("locks: %d holds, %d expiries (holder lost the lock), %d steals (taken after a loss), "
                + "%d sequence ranges; %s%n", r.holds(), r.expiries(), r.steals(), r.ranges(),
                r.ok() ? "no violation" : r.violations().size() + " VIOLATIONS"));
        r.violations().stream().limit(10).forEach(v -> sb.append("  ").append(v).append('\n'));
        return sb.toString();
    }
}

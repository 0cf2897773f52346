package io.kvraft.benchmark.nemesis;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Checks a whole history key by key (a register per key; linearizability composes over keys) within
 * one time budget. A key the budget ran out on counts as undecided, which a run must treat as a failure.
 */
public final class HistoryCheck {

    /**
     * @param keys        keys checked
     * @param operations  operations checked
     * @param violations  per violating key, its result (sub-history in {@link #subHistory})
     * @param undecided   keys the budget ran out on
     * @param elapsedNanos the checker's own run time
     */
    public record Summary(int keys, int operations, Map<String, RegisterChecker.Result> violations,
                          List<String> undecided, long elapsedNanos, Map<String, List<Op>> byKey) {

        public boolean ok() {
            return violations.isEmpty() && undecided.isEmpty();
        }

        /** The operations of one key in invocation order. */
        public List<Op> subHistory(String key) {
            return byKey.getOrDefault(key, List.of());
        }
    }

    private HistoryCheck() {
    }

    public static Summary check(List<Op> history, long budgetNanos) {
        long start = System.nanoTime();
        long deadline = start + budgetNanos;
        Map<String, List<Op>> byKey = history.stream().collect(Collectors.groupingBy(Op::key, TreeMap::new,
                Collectors.collectingAndThen(Collectors.toList(), l -> {
                    List<Op> sorted = new ArrayList<>(l);
                    sorted.sort(Comparator.comparingLong(Op::invokeNs));
                    return sorted;
                })));
        Map<String, RegisterChecker.Result> violations = new ConcurrentHashMap<>();
        List<String> undecided = java.util.Collections.synchronizedList(new ArrayList<>());
        byKey.entrySet().parallelStream().forEach(e -> {
            RegisterChecker.Result r = RegisterChecker.check(e.getValue(), deadline);
            switch (r.verdict()) {
                case VIOLATION -> violations.put(e.getKey(), r);
                case UNDECIDED -> undecided.add(e.getKey());
                default -> { }
            }
        });
        List<String> und = new ArrayList<>(undecided);
        und.sort(null);
        return new Summary(byKey.size(), history.size(), new TreeMap<>(violations), und, System.nanoTime() - start,
                byKey);
    }
}

package io.kvraft.benchmark.nemesis;

import io.kvraft.common.ErrorCode;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * How the attempts of a nemesis event (a split, a merge, a drain) ended, counted by outcome, and the report's line of
 * them.
 */
final class EventTally {

    private EventTally() {
    }

    /** Attempts per outcome, every outcome listed (0 when none ended so). */
    static <O extends Enum<O>, A> Map<O, Integer> counts(Class<O> outcomes, List<A> attempts, Function<A, O> outcome) {
        Map<O, Integer> m = new EnumMap<>(outcomes);
        for (O o : outcomes.getEnumConstants()) {
            m.put(o, 0);
        }
        attempts.forEach(a -> m.merge(outcome.apply(a), 1, Integer::sum));
        return m;
    }

    /**
     * One line: {@code 5 asked: 3 done, 1 refused (BUSY 1), 0 failed, 1 unknown (TIMEOUT 1)}; the error codes per
     * outcome other than {@code done} in parentheses (OK left out: an outcome that is no error, such as a drain that
     * ran out of time), outcome names in lower case with spaces.
     */
    static <O extends Enum<O>, A> String summary(Class<O> outcomes, O done, List<A> attempts, Function<A, O> outcome,
                                                 Function<A, ErrorCode> code) {
        Map<O, Integer> counts = counts(outcomes, attempts, outcome);
        List<String> parts = new ArrayList<>();
        for (O o : outcomes.getEnumConstants()) {
            Map<String, Long> codes = attempts.stream().filter(a -> outcome.apply(a) == o && o != done
                            && code.apply(a) != ErrorCode.OK)
                    .collect(Collectors.groupingBy(a -> code.apply(a).name(), TreeMap::new, Collectors.counting()));
            parts.add(counts.get(o) + " " + o.name().toLowerCase(Locale.ROOT).replace('_', ' ') + (codes.isEmpty() ? ""
                    : " (" + codes.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                    .collect(Collectors.joining(", ")) + ")"));
        }
        return attempts.size() + " asked: " + String.join(", ", parts);
    }
}

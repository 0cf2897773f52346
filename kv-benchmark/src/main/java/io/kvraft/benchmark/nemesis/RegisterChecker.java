package io.kvraft.benchmark.nemesis;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Decides whether the history of one key is linearizable for a register with compare-and-set.
 * Written here because no such checker for recorded histories is on Maven Central (Knossos and
 * Porcupine are Clojure and Go).
 *
 * <p>The search is Wing and Gong's, with Lowe's memoization as in Porcupine: walk the call/return
 * events in time order; at a call, try to linearize that operation now (the model must allow its
 * result), remember the pair (set of linearized operations, model state) so no pair is explored
 * twice, and backtrack when a return is reached whose operation is not yet linearized.
 *
 * <p>The model state is the set of values the register may hold, so an indeterminate
 * compare-and-set (which may or may not have applied) keeps both outcomes open. Indeterminate
 * operations never return, so they may also be placed after everything, which is the same as never
 * having happened. Nothing here relies on written values being unique: a delete writes absent, however
 * many deletes there are, and each is placed once like any write. Unique put values are what make a
 * violation easy to read, and the pruning in {@link #check} cheap.
 */
public final class RegisterChecker {

    public enum Verdict { LINEARIZABLE, VIOLATION, UNDECIDED }

    /**
     * @param verdict    the answer
     * @param longest    for a violation: the operations of the longest linearizable prefix the search found,
     *                   in their linearization order (helps to see where it went wrong)
     * @param stuckAt    for a violation: an operation that could not be placed after that prefix, or null
     */
    public record Result(Verdict verdict, List<Op> longest, Op stuckAt) {
    }

    private static final long[] ABSENT = {0};
    private static final int CHECK_CLOCK_EVERY = 1024;

    private RegisterChecker() {
    }

    /**
     * Checks the operations of one key (all with the same key), starting from an absent value.
     *
     * <p>Indeterminate operations make the search exponential (each may be placed anywhere, or
     * nowhere), and leaving one out is always allowed (place it after everything). So the search runs
     * first without those nobody can have observed, and only if that finds no linearization with more
     * of them, up to the whole history, since such an operation might be what made a CAS fail:
     * <ol>
     * <li>without indeterminate deletes, and without indeterminate writes and CASes whose value nobody
     * read or expected;</li>
     * <li>plus the indeterminate deletes invoked before some operation that saw the key absent completed
     * (absent is also the start state and written by every delete, so it says less about who wrote it);</li>
     * <li>everything.</li>
     * </ol>
     *
     * @param deadlineNanos on {@link System#nanoTime()}; past it the answer is UNDECIDED
     */
    public static Result check(List<Op> ops, long deadlineNanos) {
        Set<Long> observed = new HashSet<>();
        long lastAbsentSeenNs = Long.MIN_VALUE;
        for (Op o : ops) {
            long seen = o.kind() == Op.Kind.READ ? o.value() : o.kind() == Op.Kind.CAS ? o.expect() : -1;
            if (seen >= 0) {
                observed.add(seen);
            }
            if (seen == 0) {
                lastAbsentSeenNs = Math.max(lastAbsentSeenNs, o.completeNs());
            }
        }
        long absentSeen = lastAbsentSeenNs;
        List<Op> first = ops.stream().filter(o -> o.outcome() == Op.Outcome.OK
                || (o.kind() != Op.Kind.DELETE && observed.contains(o.value()))).toList();
        List<Op> second = ops.stream().filter(o -> o.outcome() == Op.Outcome.OK
                || (o.kind() != Op.Kind.DELETE ? observed.contains(o.value()) : o.invokeNs() < absentSeen)).toList();
        Result r = null;
        int tried = -1;
        for (List<Op> stage : List.of(first, second, ops)) {
            if (stage.size() == tried) {
                continue;
            }
            tried = stage.size();
            r = search(stage, deadlineNanos);
            if (r.verdict() != Verdict.VIOLATION) {
                return r;
            }
        }
        return r;
    }

    /** The search itself, over every operation given. */
    static Result search(List<Op> ops, long deadlineNanos) {
        int n = ops.size();
        Entry head = buildEntries(ops);
        Set<Memo> seen = new HashSet<>();
        Deque<Frame> stack = new ArrayDeque<>();
        BitSet linearized = new BitSet(n);
        long[] state = ABSENT;
        int bestDepth = -1;
        List<Op> best = List.of();
        Op bestStuck = null;
        long steps = 0;
        Entry entry = head.next;
        while (head.next != null) {
            if (++steps % CHECK_CLOCK_EVERY == 0 && System.nanoTime() > deadlineNanos) {
                return new Result(Verdict.UNDECIDED, List.of(), null);
            }
            if (entry.isCall) {
                long[] next = step(state, entry.op);
                if (next != null) {
                    BitSet after = (BitSet) linearized.clone();
                    after.set(entry.index);
                    if (seen.add(new Memo(after, next))) {
                        stack.push(new Frame(entry, state));
                        state = next;
                        linearized.set(entry.index);
                        entry.lift();
                        entry = head.next;
                        continue;
                    }
                }
                entry = entry.next;
            } else {
                // the earliest pending return: its operation had to be linearized by now
                if (stack.size() > bestDepth) {
                    bestDepth = stack.size();
                    List<Op> prefix = new ArrayList<>();
                    stack.descendingIterator().forEachRemaining(f -> prefix.add(f.entry.op));
                    best = prefix;
                    bestStuck = entry.op;
                }
                if (stack.isEmpty()) {
                    return new Result(Verdict.VIOLATION, best, bestStuck);
                }
                Frame top = stack.pop();
                state = top.state;
                linearized.clear(top.entry.index);
                top.entry.unlift();
                entry = top.entry.next;
            }
        }
        return new Result(Verdict.LINEARIZABLE, List.of(), null);
    }

    /** The states after applying {@code op} to any of {@code state}, or null if the op's result is impossible. */
    static long[] step(long[] state, Op op) {
        switch (op.kind()) {
            case READ -> {
                return contains(state, op.value()) ? new long[]{op.value()} : null;
            }
            case WRITE -> {
                return new long[]{op.value()};
            }
            case DELETE -> {
                return ABSENT; // an indeterminate one too: the search tries it at each point, or never
            }
            default -> {
                boolean canMatch = contains(state, op.expect());
                if (op.outcome() == Op.Outcome.OK) {
                    if (op.casApplied()) {
                        return canMatch ? new long[]{op.value()} : null;
                    }
                    long[] rest = without(state, op.expect());
                    return rest.length == 0 ? null : rest;
                }
                // unknown: applied where the value matched, or not (then any value but the expected one stays)
                long[] rest = without(state, op.expect());
                if (!canMatch) {
                    return rest;
                }
                return union(rest, op.value());
            }
        }
    }

    private static boolean contains(long[] sorted, long v) {
        return Arrays.binarySearch(sorted, v) >= 0;
    }

    private static long[] without(long[] sorted, long v) {
        int i = Arrays.binarySearch(sorted, v);
        if (i < 0) {
            return sorted;
        }
        long[] out = new long[sorted.length - 1];
        System.arraycopy(sorted, 0, out, 0, i);
        System.arraycopy(sorted, i + 1, out, i, sorted.length - i - 1);
        return out;
    }

    private static long[] union(long[] sorted, long v) {
        int i = Arrays.binarySearch(sorted, v);
        if (i >= 0) {
            return sorted;
        }
        int at = -i - 1;
        long[] out = new long[sorted.length + 1];
        System.arraycopy(sorted, 0, out, 0, at);
        out[at] = v;
        System.arraycopy(sorted, at, out, at + 1, sorted.length - at);
        return out;
    }

    /** Calls and returns in time order; on equal times calls first, so touching operations count as concurrent. */
    private static Entry buildEntries(List<Op> ops) {
        List<Entry> events = new ArrayList<>(2 * ops.size());
        for (int i = 0; i < ops.size(); i++) {
            Op op = ops.get(i);
            Entry call = new Entry(op, i, true, op.invokeNs());
            Entry ret = new Entry(op, i, false, op.completeNs());
            call.match = ret;
            events.add(call);
            events.add(ret);
        }
        events.sort(Comparator.comparingLong((Entry e) -> e.time).thenComparing(e -> !e.isCall));
        Entry head = new Entry(null, -1, false, Long.MIN_VALUE);
        Entry prev = head;
        for (Entry e : events) {
            prev.next = e;
            e.prev = prev;
            prev = e;
        }
        return head;
    }

    private static final class Entry {
        final Op op;
        final int index;
        final boolean isCall;
        final long time;
        Entry match;
        Entry prev;
        Entry next;

        Entry(Op op, int index, boolean isCall, long time) {
            this.op = op;
            this.index = index;
            this.isCall = isCall;
            this.time = time;
        }

        /** Takes this call and its return out of the list. */
        void lift() {
            prev.next = next;
            if (next != null) {
                next.prev = prev;
            }
            Entry r = match;
            r.prev.next = r.next;
            if (r.next != null) {
                r.next.prev = r.prev;
            }
        }

        /** Puts them back where they were (the reverse of {@link #lift}). */
        void unlift() {
            Entry r = match;
            r.prev.next = r;
            if (r.next != null) {
                r.next.prev = r;
            }
            prev.next = this;
            if (next != null) {
                next.prev = this;
            }
        }
    }

    private record Frame(Entry entry, long[] state) {
    }

    private record Memo(BitSet linearized, long[] state) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Memo m && linearized.equals(m.linearized) && Arrays.equals(state, m.state);
        }

        @Override
        public int hashCode() {
            return 31 * linearized.hashCode() + Arrays.hashCode(state);
        }
    }
}

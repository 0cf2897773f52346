package io.kvraft.benchmark.nemesis;

/**
 * One operation on one key of a register history, as a client saw it. Values are numbers: 0 means
 * absent, every written value is unique in the run. Times are nanoseconds on one monotonic clock.
 *
 * @param id         unique in the history
 * @param kind       read, write or compare-and-set
 * @param key        the key (a label; histories are checked key by key)
 * @param value      READ: the value read; WRITE and CAS: the value written
 * @param expect     CAS: the value expected (0 = absent); unused otherwise
 * @param invokeNs   when the client sent it
 * @param completeNs when the client got the answer; {@link Long#MAX_VALUE} for an indeterminate operation
 * @param outcome    OK (answered), or UNKNOWN (timed out or lost: may have taken effect, at any time after
 *                   its invocation, or never). Operations that certainly failed are not part of a history.
 * @param casApplied CAS with outcome OK: whether it took effect
 */
public record Op(long id, Kind kind, String key, long value, long expect, long invokeNs, long completeNs,
                 Outcome outcome, boolean casApplied) {

    public enum Kind { READ, WRITE, CAS }

    public enum Outcome { OK, UNKNOWN }

    public static Op read(long id, String key, long value, long invokeNs, long completeNs) {
        return new Op(id, Kind.READ, key, value, 0, invokeNs, completeNs, Outcome.OK, false);
    }

    public static Op write(long id, String key, long value, long invokeNs, long completeNs) {
        return new Op(id, Kind.WRITE, key, value, 0, invokeNs, completeNs, Outcome.OK, false);
    }

    public static Op cas(long id, String key, long expect, long value, boolean applied, long invokeNs, long completeNs) {
        return new Op(id, Kind.CAS, key, value, expect, invokeNs, completeNs, Outcome.OK, applied);
    }

    /** A write or CAS whose fate is unknown: it never completes. */
    public static Op unknown(long id, Kind kind, String key, long expect, long value, long invokeNs) {
        if (kind == Kind.READ) {
            throw new IllegalArgumentException("a read that failed has no effect: leave it out of the history");
        }
        return new Op(id, kind, key, value, expect, invokeNs, Long.MAX_VALUE, Outcome.UNKNOWN, false);
    }

    /** One line for humans, e.g. {@code [1.204 s .. 1.210 s] cas(17 -> 23) = true}. */
    public String describe(long originNs) {
        String end = completeNs == Long.MAX_VALUE ? "never" : secs(completeNs - originNs);
        String what = switch (kind) {
            case READ -> "read() = " + v(value);
            case WRITE -> "write(" + v(value) + ")" + (outcome == Outcome.OK ? " = ok" : " = ?");
            case CAS -> "cas(" + v(expect) + " -> " + v(value) + ")"
                    + (outcome == Outcome.OK ? " = " + casApplied : " = ?");
        };
        return "#" + id + " [" + secs(invokeNs - originNs) + " .. " + end + "] " + what;
    }

    private static String v(long value) {
        return value == 0 ? "absent" : Long.toString(value);
    }

    private static String secs(long ns) {
        return String.format("%.3f s", ns / 1e9);
    }
}

package io.kvraft.benchmark.nemesis;

/**
 * One operation on one key of a register history, as a client saw it. Values are numbers: 0 means
 * absent. Every put and CAS writes a value unique in the run; a delete writes absent, so absent may be
 * written many times. Times are nanoseconds on one monotonic clock.
 *
 * <p>A scan or a range delete is several operations here, one per register key it covered, each with
 * the range operation's interval and its id in {@code partOf}: each region's part of a range operation
 * is linearizable and a key lives in one region, so per key it is a read or a delete inside that interval.
 *
 * @param id         unique in the history
 * @param kind       read, write, compare-and-set or delete
 * @param key        the key (a label; histories are checked key by key)
 * @param value      READ: the value read; WRITE and CAS: the value written; DELETE: 0
 * @param expect     CAS: the value expected (0 = absent); unused otherwise
 * @param invokeNs   when the client sent it
 * @param completeNs when the client got the answer; {@link Long#MAX_VALUE} for an indeterminate operation
 * @param outcome    OK (answered), or UNKNOWN (timed out or lost: may have taken effect, at any time after
 *                   its invocation, or never). Operations that certainly failed are not part of a history.
 * @param casApplied CAS with outcome OK: whether it took effect
 * @param partOf     the id of the scan or range delete this is part of; -1 for a single-key operation
 */
public record Op(long id, Kind kind, String key, long value, long expect, long invokeNs, long completeNs,
                 Outcome outcome, boolean casApplied, long partOf) {

    public enum Kind { READ, WRITE, CAS, DELETE }

    public enum Outcome { OK, UNKNOWN }

    public static Op read(long id, String key, long value, long invokeNs, long completeNs) {
        return new Op(id, Kind.READ, key, value, 0, invokeNs, completeNs, Outcome.OK, false, -1);
    }

    public static Op write(long id, String key, long value, long invokeNs, long completeNs) {
        return new Op(id, Kind.WRITE, key, value, 0, invokeNs, completeNs, Outcome.OK, false, -1);
    }

    public static Op cas(long id, String key, long expect, long value, boolean applied, long invokeNs, long completeNs) {
        return new Op(id, Kind.CAS, key, value, expect, invokeNs, completeNs, Outcome.OK, applied, -1);
    }

    /** A delete that was acknowledged: the key is absent from some instant of the interval on. */
    public static Op delete(long id, String key, long invokeNs, long completeNs) {
        return new Op(id, Kind.DELETE, key, 0, 0, invokeNs, completeNs, Outcome.OK, false, -1);
    }

    /** A write, CAS or delete whose fate is unknown: it never completes. */
    public static Op unknown(long id, Kind kind, String key, long expect, long value, long invokeNs) {
        if (kind == Kind.READ) {
            throw new IllegalArgumentException("a read that failed has no effect: leave it out of the history");
        }
        long v = kind == Kind.DELETE ? 0 : value;
        return new Op(id, kind, key, v, expect, invokeNs, Long.MAX_VALUE, Outcome.UNKNOWN, false, -1);
    }

    /** This operation as the part of scan or range delete {@code rangeId} on its key. */
    public Op partOf(long rangeId) {
        return new Op(id, kind, key, value, expect, invokeNs, completeNs, outcome, casApplied, rangeId);
    }

    /** One line for humans, e.g. {@code #17 [1.204 s .. 1.210 s] cas(17 -> 23) = true}. */
    public String describe(long originNs) {
        String end = completeNs == Long.MAX_VALUE ? "never" : secs(completeNs - originNs);
        String what = switch (kind) {
            case READ -> "read() = " + v(value);
            case WRITE -> "write(" + v(value) + ")" + (outcome == Outcome.OK ? " = ok" : " = ?");
            case CAS -> "cas(" + v(expect) + " -> " + v(value) + ")"
                    + (outcome == Outcome.OK ? " = " + casApplied : " = ?");
            case DELETE -> "delete()" + (outcome == Outcome.OK ? " = ok" : " = ?");
        };
        String part = partOf < 0 ? "" : kind == Kind.READ ? " (part of scan #" + partOf + ")"
                : " (part of range delete #" + partOf + ")";
        return "#" + id + " [" + secs(invokeNs - originNs) + " .. " + end + "] " + what + part;
    }

    private static String v(long value) {
        return value == 0 ? "absent" : Long.toString(value);
    }

    private static String secs(long ns) {
        return String.format("%.3f s", ns / 1e9);
    }
}

package io.kvraft.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A distributed lock as its region's leader sees it (see {@link KvClient#locks}). Equal when every field is, the
 * arrays by content.
 *
 * @param key         the lock's key
 * @param holder      who holds it (a client's id, 1 to 128 bytes); empty when it is free
 * @param token       the fencing token of the holding; of the last one when free; 0 when never locked
 * @param count       the holder's acquisitions not yet released
 * @param leaseLeftMs what is left of the holder's lease
 * @param leaseMs     the holder's lease
 */
public record LockInfo(byte[] key, byte[] holder, long token, int count, long leaseLeftMs, long leaseMs) {

    /** Whether no one holds the lock now. */
    public boolean free() {
        return holder.length == 0;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LockInfo l && Arrays.equals(key, l.key) && Arrays.equals(holder, l.holder)
                && token == l.token && count == l.count && leaseLeftMs == l.leaseLeftMs && leaseMs == l.leaseMs;
    }

    @Override
    public int hashCode() {
        return 31 * (31 * Arrays.hashCode(key) + Arrays.hashCode(holder)) + Long.hashCode(token);
    }

    @Override
    public String toString() {
        return "LockInfo{" + Keys.printable(key) + (free() ? ", free" : ", held by "
                + new String(holder, StandardCharsets.UTF_8) + " x" + count + ", " + leaseLeftMs + " of " + leaseMs
                + " ms left") + ", token " + token + "}";
    }
}

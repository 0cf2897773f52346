package io.kvraft.benchmark.nemesis;

import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.RegionInfo;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The nemesis's split event: picks the region holding a random register key and splits it between two of its
 * register keys, so that both halves carry keys under test (at about its middle key when it holds fewer than
 * two), and counts how each split ended. A split refused or failed is no failure of the run by itself: the
 * checks after the run (linearizability, lost writes, the region map) judge what it did.
 */
final class SplitEvent {

    /** How a split ended. */
    enum Outcome {
        /** the split applied: two regions where there was one */
        DONE,
        /** refused by the server: INVALID_ARGUMENT, BUSY, STALE_EPOCH, REGION_NOT_FOUND (nothing split) */
        REFUSED,
        /** failed in a way that proves it was not taken: no leader found before the deadline, node shutting down */
        FAILED,
        /** timed out or the connection was lost after sending: it may or may not have split */
        UNKNOWN;

        static Outcome of(KvException e) {
            return switch (e.code()) {
                case INVALID_ARGUMENT, BUSY, STALE_EPOCH, REGION_NOT_FOUND -> REFUSED;
                case NOT_LEADER, NO_LEADER, SHUTTING_DOWN -> FAILED;
                case UNAVAILABLE -> e.unsent() ? FAILED : UNKNOWN;
                default -> UNKNOWN;
            };
        }
    }

    /**
     * What the event needs of a client: {@link io.kvraft.client.admin.KvAdmin#regions()} and
     * {@link io.kvraft.client.admin.KvAdmin#split}.
     */
    interface Admin {
        CompletableFuture<List<RegionInfo>> regions();

        CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey);

        static Admin of(KvClient client) {
            return new Admin() {
                @Override
                public CompletableFuture<List<RegionInfo>> regions() {
                    return client.admin().regions();
                }

                @Override
                public CompletableFuture<List<RegionInfo>> split(int regionId, byte[] atKey) {
                    return client.admin().split(regionId, atKey);
                }
            };
        }
    }

    /** One split asked: the region, the key (null: its middle), how it ended, and the error code when it did not. */
    record Attempt(int regionId, byte[] atKey, Outcome outcome, ErrorCode code, String detail) {
    }

    /** How long one split may take beyond the client's own deadline before it counts as unknown. */
    private static final long CAP_SECONDS = 30;
    /** Random register keys tried to find a region holding two or more of them. */
    private static final int TRIES = 8;

    private final Admin admin;
    private final List<byte[]> keys;
    private final Random rnd;
    final List<Attempt> attempts = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** @param keys the register keys of the workload */
    SplitEvent(Admin admin, List<byte[]> keys, Random rnd) {
        this.admin = admin;
        this.keys = keys.stream().sorted(Arrays::compareUnsigned).toList();
        this.rnd = rnd;
    }

    /** Picks a region and splits it; returns what it did, on one line. */
    String run() {
        List<RegionInfo> regions;
        try {
            regions = await(admin.regions());
        } catch (KvException e) {
            Attempt a = new Attempt(0, null, Outcome.FAILED, e.code(), "no region list: " + e.getMessage());
            attempts.add(a);
            return "split: no region list (" + e.getMessage() + "), nothing asked";
        }
        RegionInfo region = null;
        List<byte[]> inside = List.of();
        for (int t = 0; t < TRIES && inside.size() < 2; t++) {
            byte[] k = keys.get(rnd.nextInt(keys.size()));
            RegionInfo r = holding(regions, k);
            if (r != null) {
                region = r;
                inside = keysIn(r);
            }
        }
        if (region == null) {
            Attempt a = new Attempt(0, null, Outcome.FAILED, ErrorCode.REGION_NOT_FOUND, "no region holds the keys");
            attempts.add(a);
            return "split: no region in the list holds a register key, nothing asked";
        }
        byte[] at = inside.size() >= 2 ? inside.get(1 + rnd.nextInt(inside.size() - 1)) : null;
        String what = "split region " + region.id() + " " + range(region) + " (epoch " + region.epoch() + ", "
                + inside.size() + " register keys) at " + (at == null ? "its middle" : printable(at));
        Attempt a;
        try {
            List<RegionInfo> halves = await(admin.split(region.id(), at));
            RegionInfo right = halves.get(halves.size() - 1);
            a = new Attempt(region.id(), at, Outcome.DONE, ErrorCode.OK,
                    "new region " + right.id() + " " + range(right) + ", epoch " + right.epoch());
        } catch (KvException e) {
            a = new Attempt(region.id(), at, Outcome.of(e), e.code(), e.getMessage());
        }
        attempts.add(a);
        return what + ": " + a.outcome().name().toLowerCase(Locale.ROOT)
                + (a.outcome() == Outcome.DONE ? ", " + a.detail() : " (" + a.detail() + ")");
    }

    /** Splits asked so far, by outcome. */
    Map<Outcome, Integer> counts() {
        return EventTally.counts(Outcome.class, attempts, Attempt::outcome);
    }

    int done() {
        return counts().get(Outcome.DONE);
    }

    /**
     * One line: {@code 5 asked: 3 done, 1 refused (BUSY 1), 0 failed, 1 unknown (TIMEOUT 1)}; the error codes
     * per outcome in parentheses.
     */
    String summary() {
        return EventTally.summary(Outcome.class, Outcome.DONE, attempts, Attempt::outcome, Attempt::code);
    }

    private List<byte[]> keysIn(RegionInfo r) {
        return keysIn(keys, r);
    }

    /** The keys of {@code keys} that region {@code r} holds, in their order. */
    static List<byte[]> keysIn(List<byte[]> keys, RegionInfo r) {
        byte[] start = r.startKey();
        byte[] end = r.endKey();
        return keys.stream().filter(k -> Arrays.compareUnsigned(k, start) >= 0
                && (end.length == 0 || Arrays.compareUnsigned(k, end) < 0)).toList();
    }

    private static RegionInfo holding(List<RegionInfo> regions, byte[] key) {
        for (RegionInfo r : regions) {
            byte[] end = r.endKey();
            if (Arrays.compareUnsigned(key, r.startKey()) >= 0
                    && (end.length == 0 || Arrays.compareUnsigned(key, end) < 0)) {
                return r;
            }
        }
        return null;
    }

    static String range(RegionInfo r) {
        return "[" + printable(r.startKey()) + ", "
                + (r.endKey().length == 0 ? "+inf" : printable(r.endKey())) + ")";
    }

    /** A key for humans: printable ASCII as is, other bytes as \xNN; the empty key as "". */
    static String printable(byte[] key) {
        StringBuilder b = new StringBuilder("\"");
        for (byte x : key) {
            int c = x & 0xff;
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
                b.append((char) c);
            } else {
                b.append(String.format(Locale.ROOT, "\\x%02x", c));
            }
        }
        return b.append('"').toString();
    }

    /** The answer, within {@link #CAP_SECONDS}: a failure, a timeout or an interrupt is thrown as a KvException. */
    static <T> T await(CompletableFuture<T> f) {
        try {
            return f.get(CAP_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw KvException.unwrap(e.getCause());
        } catch (TimeoutException e) {
            throw new KvException(ErrorCode.TIMEOUT, "no answer within " + CAP_SECONDS + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KvException(ErrorCode.TIMEOUT, "interrupted");
        }
    }
}

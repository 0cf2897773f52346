package io.kvraft.benchmark.nemesis;

import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.client.admin.RegionInfo;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

/**
 * The nemesis's merge event: picks two adjacent regions (the left one ends where the right one starts), preferring
 * a pair whose smaller side holds the fewest register keys (a half a split left small), and merges the right one
 * into the left one; counts how each merge ended. A merge refused, failed or rolled back is no failure of the run
 * by itself: the checks after the run (linearizability, lost writes, the region map) judge what it did.
 */
final class MergeEvent {

    /** How a merge ended. */
    enum Outcome {
        /** the merge applied: one region where there were two */
        DONE,
        /** refused by the server: INVALID_ARGUMENT, BUSY, STALE_EPOCH, REGION_NOT_FOUND (nothing merged) */
        REFUSED,
        /** failed in a way that proves it was not taken: no leader found before the deadline, node shutting down */
        FAILED,
        /** begun and then undone whole: both regions as they were (UNAVAILABLE, "... rolled back: why") */
        ROLLED_BACK,
        /** timed out, the connection was lost after sending, or not finished: it may or may not have merged */
        UNKNOWN;

        static Outcome of(KvException e) {
            return switch (e.code()) {
                case INVALID_ARGUMENT, BUSY, STALE_EPOCH, REGION_NOT_FOUND -> REFUSED;
                case NOT_LEADER, NO_LEADER, SHUTTING_DOWN -> FAILED;
                // "... not finished (why) ...": it may still be finished, whatever the why says
                case UNAVAILABLE -> e.unsent() ? FAILED : e.getMessage().contains("rolled back")
                        && !e.getMessage().contains("not finished") ? ROLLED_BACK : UNKNOWN;
                default -> UNKNOWN;
            };
        }
    }

    /**
     * What the event needs of a client: {@link io.kvraft.client.admin.KvAdmin#regions()} and
     * {@link io.kvraft.client.admin.KvAdmin#merge}.
     */
    interface Admin {
        CompletableFuture<List<RegionInfo>> regions();

        CompletableFuture<RegionInfo> merge(int leftId, int rightId);

        static Admin of(KvClient client) {
            return new Admin() {
                @Override
                public CompletableFuture<List<RegionInfo>> regions() {
                    return client.admin().regions();
                }

                @Override
                public CompletableFuture<RegionInfo> merge(int leftId, int rightId) {
                    return client.admin().merge(leftId, rightId);
                }
            };
        }
    }

    /** One merge asked: the regions (0 when none), how it ended, and the error code when it did not. */
    record Attempt(int leftId, int rightId, Outcome outcome, ErrorCode code, String detail) {
    }

    private final Admin admin;
    private final List<byte[]> keys;
    private final Random rnd;
    final List<Attempt> attempts = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** @param keys the register keys of the workload */
    MergeEvent(Admin admin, List<byte[]> keys, Random rnd) {
        this.admin = admin;
        this.keys = keys.stream().sorted(Arrays::compareUnsigned).toList();
        this.rnd = rnd;
    }

    /** Picks two adjacent regions and merges them; returns what it did, on one line. */
    String run() {
        List<RegionInfo> regions;
        try {
            regions = SplitEvent.await(admin.regions());
        } catch (KvException e) {
            attempts.add(new Attempt(0, 0, Outcome.FAILED, e.code(), "no region list: " + e.getMessage()));
            return "merge: no region list (" + e.getMessage() + "), nothing asked";
        }
        if (regions.size() < 2) {
            return "merge: " + (regions.isEmpty() ? "no" : "1") + " region in the list, nothing to merge, nothing asked";
        }
        List<RegionInfo[]> pairs = smallestPairs(regions);
        if (pairs.isEmpty()) {
            attempts.add(new Attempt(0, 0, Outcome.FAILED, ErrorCode.REGION_NOT_FOUND, "no adjacent regions"));
            return "merge: no two regions in the list are adjacent, nothing asked";
        }
        RegionInfo[] pair = pairs.get(rnd.nextInt(pairs.size()));
        RegionInfo left = pair[0];
        RegionInfo right = pair[1];
        String what = "merge region " + right.id() + " " + SplitEvent.range(right) + " (epoch " + right.epoch()
                + ", " + SplitEvent.keysIn(keys, right).size() + " register keys) into region " + left.id() + " "
                + SplitEvent.range(left) + " (epoch " + left.epoch() + ", " + SplitEvent.keysIn(keys, left).size()
                + " register keys)";
        Attempt a;
        try {
            RegionInfo merged = SplitEvent.await(admin.merge(left.id(), right.id()));
            a = new Attempt(left.id(), right.id(), Outcome.DONE, ErrorCode.OK,
                    "now region " + merged.id() + " " + SplitEvent.range(merged) + ", epoch " + merged.epoch());
        } catch (KvException e) {
            a = new Attempt(left.id(), right.id(), Outcome.of(e), e.code(), e.getMessage());
        }
        attempts.add(a);
        return what + ": " + a.outcome().name().toLowerCase(Locale.ROOT).replace('_', ' ')
                + (a.outcome() == Outcome.DONE ? ", " + a.detail() : " (" + a.detail() + ")");
    }

    /**
     * The adjacent pairs {left, right} whose smaller side holds the fewest register keys. The last region (it ends
     * at +inf, the empty key) is never a left one, though the first one starts at the empty key.
     */
    private List<RegionInfo[]> smallestPairs(List<RegionInfo> regions) {
        List<RegionInfo[]> best = new ArrayList<>();
        int fewest = Integer.MAX_VALUE;
        for (RegionInfo l : regions) {
            for (RegionInfo r : regions) {
                if (l.endKey().length == 0 || l.id() == r.id() || !Arrays.equals(l.endKey(), r.startKey())) {
                    continue;
                }
                int smaller = Math.min(SplitEvent.keysIn(keys, l).size(), SplitEvent.keysIn(keys, r).size());
                if (smaller < fewest) {
                    best.clear();
                    fewest = smaller;
                }
                if (smaller == fewest) {
                    best.add(new RegionInfo[]{l, r});
                }
            }
        }
        return best;
    }

    /** Merges asked so far, by outcome. */
    Map<Outcome, Integer> counts() {
        return EventTally.counts(Outcome.class, attempts, Attempt::outcome);
    }

    int done() {
        return counts().get(Outcome.DONE);
    }

    /**
     * One line: {@code 5 asked: 2 done, 1 refused (BUSY 1), 0 failed, 1 rolled back (UNAVAILABLE 1), 1 unknown
     * (TIMEOUT 1)}; the error codes per outcome in parentheses.
     */
    String summary() {
        return EventTally.summary(Outcome.class, Outcome.DONE, attempts, Attempt::outcome, Attempt::code);
    }
}

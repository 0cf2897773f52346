package io.kvraft.server.shape;

import io.kvraft.server.host.RegionCatalog;
import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import com.google.protobuf.ByteString;
import io.kvraft.common.proto.KvProto.ErrorCode;
import io.kvraft.common.proto.KvProto.SplitResponse;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.common.Errors;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Splits regions this node leads: by hand ({@code kv-client split}) and, every {@code split.checkIntervalMs},
 * those that passed {@code split.maxKeys}, {@code split.maxBytes} or {@code split.maxOpsPerSecond}. A split is
 * one SPLIT entry in the region's log; the new region's id comes from a cluster-wide sequence (the system
 * record {@link #REGION_ID_SEQUENCE}), so ids are never handed out twice, whichever node splits.
 */
public final class Splitter implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(Splitter.class);

    /** The sequence region ids are taken from; reserved: clients may not reset it. */
    public static final ByteString REGION_ID_SEQUENCE = io.kvraft.server.coord.Sequences.REGION_IDS;

    /** Hands out new region ids, each once in the cluster's life. */
    public interface Ids {
        CompletableFuture<Integer> next();
    }

    private final RegionHost host;
    private final KvStore store;
    private final Ids ids;
    private final SplitConfig config;
    private final int maxKeyBytes;
    /** Regions with a split in flight from this node: one at a time per region. */
    private final Set<Integer> splitting = ConcurrentHashMap.newKeySet();
    /** Per region, its operation count at the last check, for the load rule. */
    private final Map<Integer, long[]> lastOps = new ConcurrentHashMap<>();
    private final Supplier<Long> clockMs;
    /**
     * Where a split is decided: finding a middle key reads the region's keys and the first region id makes the node's
     * own client, which waits for the cluster. Never a request handler's thread: those are bolt's I/O threads, and one
     * of them blocked stalls every request on its connections.
     */
    private final java.util.concurrent.Executor work;

    public Splitter(RegionHost host, KvStore store, Ids ids, SplitConfig config, int maxKeyBytes, Supplier<Long> clockMs,
                    java.util.concurrent.Executor work) {
        this.host = host;
        this.store = store;
        this.ids = ids;
        this.config = config;
        this.maxKeyBytes = maxKeyBytes;
        this.clockMs = clockMs;
        this.work = work;
    }

    /**
     * Splits region {@code regionId} at {@code key} (empty: about its middle key). {@code epoch} 0 accepts any.
     * Never fails the future: errors are in the answer.
     */
    public CompletableFuture<SplitResponse> split(int regionId, long epoch, byte[] key) {
        try {
            return CompletableFuture.supplyAsync(() -> splitNow(regionId, epoch, key), work).thenCompose(f -> f);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            return error(ErrorCode.SHUTTING_DOWN, "", "node " + host.endpoint() + " is shutting down");
        }
    }

    private CompletableFuture<SplitResponse> splitNow(int regionId, long epoch, byte[] key) {
        Region region = host.region(regionId);
        if (region == null) {
            return error(ErrorCode.REGION_NOT_FOUND, "", "no region " + regionId + " on " + host.endpoint());
        }
        if (!region.isLeader()) {
            String hint = region.leaderHint();
            return error(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                    "this node does not lead region " + regionId);
        }
        long current = region.epoch();
        if (epoch != 0 && epoch != current) {
            return error(ErrorCode.STALE_EPOCH, "", "region " + regionId + " is at epoch " + current + ", request has " + epoch);
        }
        KeyRange range = region.range();
        if (key.length > maxKeyBytes) {
            return error(ErrorCode.INVALID_ARGUMENT, "", "split key of " + key.length + " bytes exceeds limits.maxKeyBytes "
                    + maxKeyBytes);
        }
        if (key.length == 0) {
            key = store.middleKey(regionId, range);
            if (key == null || !range.splitsAt(key)) {
                return error(ErrorCode.INVALID_ARGUMENT, "", "region " + regionId + " " + range
                        + " has too few keys to split at its middle; name a key to split at");
            }
        } else if (!range.splitsAt(key)) {
            return error(ErrorCode.INVALID_ARGUMENT, "", "split key " + HexFormat.of().formatHex(key)
                    + " is not strictly inside region " + regionId + " " + range
                    + ": a region splits at a key above its start and below its end");
        }
        if (region.moving()) {
            return error(ErrorCode.BUSY, "", "region " + regionId + " is moving a replica; split it after that");
        }
        if (!splitting.add(regionId)) {
            return error(ErrorCode.BUSY, "", "region " + regionId + " is being split already");
        }
        byte[] at = key;
        CompletableFuture<SplitResponse> answer = new CompletableFuture<>();
        ids.next().whenComplete((newId, failure) -> {
            if (failure != null) {
                splitting.remove(regionId);
                answer.complete(SplitResponse.newBuilder().setError(Errors.of(ErrorCode.UNAVAILABLE,
                        "cannot take a new region id: " + failure.getMessage())).build());
                return;
            }
            region.split(at, newId, current, (status, split, left, right) -> {
                splitting.remove(regionId);
                if (!status.isOk()) {
                    answer.complete(SplitResponse.newBuilder().setError(region.errorOf(status)).build());
                } else if (!split) {
                    answer.complete(SplitResponse.newBuilder().setError(Errors.of(ErrorCode.STALE_EPOCH, "",
                            "region " + regionId + " changed before the split applied (now epoch " + left.getEpoch()
                                    + " " + region.range() + "); nothing was split")).build());
                } else {
                    answer.complete(SplitResponse.newBuilder().setLeft(region.info())
                            .setRight(host.startingInfo(right, region.peers())).build());
                }
            });
        });
        return answer;
    }

    private static CompletableFuture<SplitResponse> error(ErrorCode code, String hint, String detail) {
        return CompletableFuture.completedFuture(SplitResponse.newBuilder().setError(Errors.of(code, hint, detail)).build());
    }

    /** One check of the regions this node leads: splits (one at a time) the first that passed a limit. */
    @Override
    public void run() {
        try {
            check();
        } catch (RuntimeException e) {
            LOG.warn("split check failed: {}", e.toString());
        }
    }

    private void check() {
        long now = clockMs.get();
        for (Region r : host.regions()) {
            long ops = r.opsServed();
            long[] last = lastOps.put(r.id(), new long[]{ops, now});
            if (!r.isLeader() || !splitting.isEmpty()) {
                continue;
            }
            String why = null;
            KeyRange range = r.range();
            long keys = store.approximateKeys(range);
            if (keys > config.maxKeys()) {
                why = "about " + keys + " keys, split.maxKeys is " + config.maxKeys();
            } else {
                long bytes = store.approximateBytes(range);
                if (bytes > config.maxBytes()) {
                    why = "about " + bytes + " bytes, split.maxBytes is " + config.maxBytes();
                } else if (config.maxOpsPerSecond() > 0 && last != null && now > last[1]) {
                    long rate = (ops - last[0]) * 1000 / (now - last[1]);
                    if (rate > config.maxOpsPerSecond() && keys >= 2) {
                        why = rate + " ops/s, split.maxOpsPerSecond is " + config.maxOpsPerSecond();
                    }
                }
            }
            if (why != null) {
                String reason = why;
                LOG.info("region {} {}: splitting it at its middle key ({})", r.id(), range, reason);
                split(r.id(), r.epoch(), new byte[0]).thenAccept(resp -> {
                    if (resp.hasError()) {
                        LOG.info("region {}: automatic split not done: {}", r.id(), resp.getError().getDetail());
                    } else {
                        LOG.info("region {} split: keeps {}, region {} takes the rest", r.id(), r.range(),
                                resp.getRight().getId());
                    }
                });
                return; // one split per check: the next check sees the new sizes
            }
        }
    }

    /**
     * Ids from the cluster-wide sequence {@link #REGION_ID_SEQUENCE}.
     *
     * @param takeNumber takes one number of a sequence from its region's leader (a fresh sequence's first is 0)
     */
    public static Ids fromSequence(java.util.function.Function<ByteString, java.util.concurrent.CompletableFuture<Long>> takeNumber) {
        return () -> takeNumber.apply(REGION_ID_SEQUENCE).thenApply(number -> {
            long id = RegionCatalog.FIRST_SPLIT_ID + number;
            if (id > Integer.MAX_VALUE) {
                throw new IllegalStateException("region ids are used up");
            }
            return (int) id;
        });
    }
}

package io.kvraft.server.meta;

import io.kvraft.common.ErrorCode;
import io.kvraft.common.KvException;
import io.kvraft.common.RegionViews;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.server.balance.Placement;
import io.kvraft.server.config.ServerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * On the map's leader: placement ({@link Placement}) driven, up to {@code placement.movesAtOnce} replica moves of
 * different regions at once (a balancing move alone), each asked of the region's leader like {@code kv-client
 * move-replica}. A region whose move ended is left alone until every live node reported after that end.
 */
final class PlacementDriver {

    private static final Logger LOG = LoggerFactory.getLogger(PlacementDriver.class);
    /**
     * A region whose move failed is left alone this long; one whose move was refused as not matching the region (its
     * replicas moved meanwhile: a recovery, a move by hand) only until fresh reports show it as it is.
     */
    private static final long RETRY_AFTER_NANOS = TimeUnit.SECONDS.toNanos(30);

    /** A move under way since {@code startNanos}. */
    record Running(Placement.Move move, long startNanos) {
    }

    /** A move that ended at {@code endNanos}: {@code done} when it made its change. */
    private record Settling(Placement.Move move, long endNanos, boolean done) {
    }

    private final ServerConfig config;
    private final MetaService.Mover mover;
    private final NodeReports reports;
    private final long intervalNanos;
    /** The moves under way, by region (at most {@code placement.movesAtOnce}). */
    private final Map<Integer, Running> running = new ConcurrentHashMap<>();
    /**
     * Per region whose move ended, when (nanoTime): placement leaves the region alone until every live node reported
     * after it, and balances only once no region is left here (a report from before a move's end shows the region as it
     * was).
     */
    private final Map<Integer, Settling> settling = new ConcurrentHashMap<>();
    private final Map<Integer, Long> retryAt = new ConcurrentHashMap<>();
    private final AtomicLong movesDone = new AtomicLong();

    PlacementDriver(ServerConfig config, MetaService.Mover mover, NodeReports reports) {
        this.config = config;
        this.mover = mover;
        this.reports = reports;
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(config.placement().intervalMs());
    }

    /** On the group's thread: a new leader forgets the failed moves of an earlier term of its own. */
    void leaderChanged() {
        retryAt.clear();
    }

    /** Moves made since this node started, on any term of its leadership. */
    long movesDone() {
        return movesDone.get();
    }

    /** The moves under way, by region id. */
    List<Running> running() {
        return List.copyOf(new TreeMap<>(running).values());
    }

    /** Starts the moves placement asks for, up to {@code placement.movesAtOnce} under way. */
    void place(ClusterMap map, Placement.View view) {
        int limit = config.placement().movesAtOnce();
        if (running.size() >= limit) {
            return;
        }
        long now = System.nanoTime();
        if (now - reports.leaderSinceNanos() < 3 * intervalNanos) {
            return; // a new leader waits for every node's report (and for a move its predecessor started to end)
        }
        long oldest = now;
        for (String n : view.live()) {
            NodeReports.Report r = reports.get(n);
            if (r == null) {
                return;
            }
            oldest = Math.min(oldest, r.atNanos());
        }
        long oldestReport = oldest;
        settling.values().removeIf(t -> oldestReport - t.endNanos() > 0); // every live node reported after its end
        retryAt.values().removeIf(t -> t - now < 0);
        Set<Integer> skip = new HashSet<>(retryAt.keySet());
        skip.addAll(settling.keySet());
        // the counts of replicas per node take the moves under way and those whose reports are not in yet as done
        List<Placement.Move> under = new ArrayList<>(running.values().stream().map(Running::move).toList());
        settling.values().stream().filter(Settling::done).forEach(t -> under.add(t.move()));
        // balancing waits for the reports after every move's end; a region short of a copy or a drain does not
        boolean balance = covers(view) && settling.isEmpty();
        for (int started = running.size(); started < limit; started++) {
            Optional<Placement.Move> next = Placement.next(map, view, balance, skip, under);
            if (next.isEmpty()) {
                return;
            }
            Placement.Move m = next.get();
            under.add(m); // Placement leaves its region alone and counts its target's replica
            start(m); // after a balancing move the next call finds none: Placement balances with no move under way
        }
    }

    private static boolean covers(Placement.View view) {
        RegionViews v = new RegionViews();
        v.add(view.regions());
        return v.covers();
    }

    /** Asks the region's leader for the move {@code m}, and counts how it ended. */
    private void start(Placement.Move m) {
        Running run = new Running(m, System.nanoTime());
        running.put(m.regionId(), run);
        LOG.info("placement: region {}: {} -> {} ({}){}", m.regionId(), m.from(), m.to(), m.reason(),
                running.size() > 1 ? ", " + running.size() + " moves at once" : "");
        CompletableFuture<RegionInfo> f;
        try {
            f = m.from().isEmpty() ? mover.add(m.regionId(), m.to())
                    : m.from().equals(m.to()) ? mover.rebuild(m.regionId(), m.to())
                    : mover.move(m.regionId(), m.from(), m.to());
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((r, e) -> {
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - run.startNanos());
            if (e == null) {
                movesDone.incrementAndGet();
                LOG.info("placement: region {}: {} -> {} done in {} ms; replicas on {}", m.regionId(), m.from(), m.to(),
                        ms, r.getPeersList());
            } else {
                boolean stale = KvException.unwrap(e).code() == ErrorCode.INVALID_ARGUMENT;
                retryAt.put(m.regionId(), System.nanoTime() + (stale ? 3 * intervalNanos : RETRY_AFTER_NANOS));
                LOG.warn("placement: region {}: {} -> {} failed after {} ms: {}", m.regionId(), m.from(), m.to(), ms,
                        KvException.unwrap(e).getMessage());
            }
            settling.put(m.regionId(), new Settling(m, System.nanoTime(), e == null));
            running.remove(m.regionId(), run);
        });
    }
}

package io.kvraft.server.shape;

import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.entity.PeerId;
import io.kvraft.common.rpc.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Takes out the learners of each region this node leads that have stayed {@code moves.strayLearnerMs} with no move of
 * this node running there, and drops their replicas. Learners exist only while a move runs on the region's leader
 * ({@link ReplicaMover}), so these were added by a leader that lost the leadership mid-move (its move is given up, and it
 * could not take them out); left alone they would stay in the configuration for ever, each one replicated to. The wait
 * lets the next leader finish the catch-up it inherited (a snapshot loop jraft gets into there ends by itself only with
 * a snapshot) and keeps a leadership that bounces back to the mover from racing it. Run periodically; the removals run
 * on the move thread, so never beside a move of this node.
 */
public final class StrayLearners implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(StrayLearners.class);

    private final RegionHost host;
    private final ReplicaCalls calls;
    private final Executor work;
    private final long strayLearnerNanos;
    private final LongSupplier nanoClock;
    /** Per region this node leads with learners and no move of its own, since when (nanoClock); the sweeper's only. */
    private final Map<Integer, Long> strayingSince = new HashMap<>();
    /** Regions whose stray learners are being taken out on {@code work}. */
    private final Set<Integer> sweeping = ConcurrentHashMap.newKeySet();

    /**
     * @param work           the thread replica moves run on: a removal never runs beside a move
     * @param strayLearnerMs how long a region this node leads may keep learners that no move of this node uses before
     *                       they are taken out
     */
    public StrayLearners(RegionHost host, Transport peers, Executor work, long strayLearnerMs, LongSupplier nanoClock) {
        this.host = host;
        this.calls = new ReplicaCalls(peers);
        this.work = work;
        this.strayLearnerNanos = TimeUnit.MILLISECONDS.toNanos(strayLearnerMs);
        this.nanoClock = nanoClock;
    }

    @Override
    public void run() {
        try {
            sweepOnce();
        } catch (RuntimeException e) {
            LOG.warn("stray learner check failed: {}", e.toString());
        }
    }

    void sweepOnce() {
        long now = nanoClock.getAsLong();
        Set<Integer> straying = new HashSet<>();
        for (Region r : host.regions()) {
            Node n = r.node();
            if (n == null || !r.isLeader() || r.moving() || sweeping.contains(r.id()) || r.learners().isEmpty()) {
                continue;
            }
            straying.add(r.id());
            long since = strayingSince.computeIfAbsent(r.id(), id -> now);
            if (now - since >= strayLearnerNanos && sweeping.add(r.id())) {
                straying.remove(r.id());
                int id = r.id();
                try {
                    work.execute(() -> {
                        try {
                            takeOutStrays(id);
                        } finally {
                            sweeping.remove(id);
                        }
                    });
                } catch (RejectedExecutionException closed) {
                    sweeping.remove(id);
                }
            }
        }
        strayingSince.keySet().retainAll(straying);
    }

    private void takeOutStrays(int id) {
        if (ReplicaMover.refusedAtOnce(host, id) != null) { // not the leader now, or in a merge or a move
            return;
        }
        Region region = host.region(id);
        Node node = region.node();
        List<PeerId> learners = node == null ? List.of() : ReplicaCalls.learners(region);
        if (learners.isEmpty()) {
            return;
        }
        region.moving(true); // a move asked meanwhile is answered BUSY, and the balancer leaves the region alone
        try {
            LOG.info("region {}: learners {} stayed {} ms with no move of this leader: a leader that lost the leadership"
                    + " mid-move added them; taking them out", id, learners, TimeUnit.NANOSECONDS.toMillis(strayLearnerNanos));
            Status st = ReplicaCalls.await(done -> node.removeLearners(learners, done::complete));
            if (!st.isOk()) {
                LOG.info("region {}: learners {} not taken out ({}); tried again later", id, learners, st);
                return;
            }
            for (PeerId l : learners) {
                calls.dropOn(l.getEndpoint().toString(), region, region.peers());
            }
            LOG.info("region {}: learners {} taken out and their replicas dropped; replicas on {}", id, learners,
                    region.peers());
        } finally {
            region.moving(false);
        }
    }
}

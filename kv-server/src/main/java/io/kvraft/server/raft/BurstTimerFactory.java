package io.kvraft.server.raft;

import com.alipay.sofa.jraft.core.Scheduler;
import com.alipay.sofa.jraft.util.SPI;
import com.alipay.sofa.jraft.util.timer.DefaultRaftTimerFactory;
import com.alipay.sofa.jraft.util.timer.Timer;

import java.util.function.ToLongBiFunction;

/**
 * jraft's timer factory (its {@code RaftTimerFactory} extension point, found by jraft's service loader, which takes the
 * highest priority), with the Raft scheduler wrapped so that a node's heartbeats go in bursts ({@link HeartbeatBursts})
 * and, for a region replica with node heartbeats on ({@link QuietRegions}), go less often while the region is quiet;
 * and with that replica's election and step-down timers put off while node heartbeats vouch for its leader or its
 * quorum ({@link GuardedTimer}). Vote and snapshot timers are jraft's own, and so is everything for groups that are not
 * regions (the cluster map's): their replicas are not registered, and the guards then let every task run.
 */
@SPI(priority = 100)
public class BurstTimerFactory extends DefaultRaftTimerFactory {

    private static final String ELECTION = "JRaft-ElectionTimer-";
    private static final String STEP_DOWN = "JRaft-StepDownTimer-";

    @Override
    public Scheduler getRaftScheduler(boolean shared, int workerNum, String name) {
        String replica = QuietRegions.starting(); // jraft makes a node's scheduler as the node starts
        HeartbeatBursts scheduler = new HeartbeatBursts(super.getRaftScheduler(shared, workerNum, name), () -> {
            QuietRegions.Replica r = QuietRegions.get(replica);
            return r == null ? 1 : r.heartbeatStretch();
        });
        QuietRegions.Replica r = QuietRegions.get(replica);
        if (r != null) {
            r.heartbeatsNow(scheduler::sendNow);
        }
        return scheduler;
    }

    @Override
    public Timer getElectionTimer(boolean shared, String name) {
        return guarded(super.getElectionTimer(shared, name), name, ELECTION,
                (r, delay) -> r.electionPutOffNanos(System.nanoTime()));
    }

    @Override
    public Timer getStepDownTimer(boolean shared, String name) {
        return guarded(super.getStepDownTimer(shared, name), name, STEP_DOWN,
                (r, delay) -> r.stepDownPutOffNanos(System.nanoTime(), delay));
    }

    /** jraft's timer named {@code name}, its tasks put off as {@code putOff} says while the replica is registered. */
    private static Timer guarded(Timer jraft, String name, String prefix,
                                 ToLongBiFunction<QuietRegions.Replica, Long> putOff) {
        if (!name.startsWith(prefix)) {
            return jraft;
        }
        String key = name.substring(prefix.length()); // jraft's node id: "<group/peer>"
        return new GuardedTimer(jraft, delay -> {
            QuietRegions.Replica r = QuietRegions.get(key);
            return r == null ? 0 : putOff.applyAsLong(r, delay);
        });
    }
}

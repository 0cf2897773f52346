package io.kvraft.server.region;

import com.alipay.sofa.jraft.core.Scheduler;
import com.alipay.sofa.jraft.util.SPI;
import com.alipay.sofa.jraft.util.timer.DefaultRaftTimerFactory;

/**
 * jraft's timer factory (its {@code RaftTimerFactory} extension point, found by jraft's service loader, which takes the
 * highest priority), with the Raft scheduler wrapped so that a node's heartbeats go in bursts ({@link HeartbeatBursts}).
 * Election, vote, step-down and snapshot timers are jraft's own.
 */
@SPI(priority = 100)
public class BurstTimerFactory extends DefaultRaftTimerFactory {

    @Override
    public Scheduler getRaftScheduler(boolean shared, int workerNum, String name) {
        return new HeartbeatBursts(super.getRaftScheduler(shared, workerNum, name));
    }
}

package io.kvraft.server;

import com.sun.management.HotSpotDiagnosticMXBean;
import com.sun.management.VMOption;

import java.lang.management.ManagementFactory;

/**
 * Keeps an idle node's memory flat. Heartbeats allocate a little all the time; G1 collects only when
 * its young generation is full, so an idle node's resident memory crept up for minutes as the young
 * generation filled for the first time. With a periodic collection when
 * none has run for a minute, G1 also gives the unused heap back. The flag is manageable, so it is set
 * here for every way a node is started; a value given on the command line wins.
 */
public final class IdleMemory {

    static final String PERIODIC_GC_MS = "60000";

    private IdleMemory() {
    }

    public static void apply() {
        try {
            HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            VMOption g1 = hs.getVMOption("UseG1GC");
            VMOption periodic = hs.getVMOption("G1PeriodicGCInterval");
            if ("true".equals(g1.getValue()) && periodic.getOrigin() == VMOption.Origin.DEFAULT) {
                hs.setVMOption("G1PeriodicGCInterval", PERIODIC_GC_MS);
            }
        } catch (RuntimeException | LinkageError notHotSpot) {
            // another JVM, or the flag is gone: the node runs as before
        }
    }
}

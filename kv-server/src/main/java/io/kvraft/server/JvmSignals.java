package io.kvraft.server;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * Keeps SIGUSR2 with the JVM.
 *
 * <p>When its class loads, jraft's {@code NodeImpl} installs a Java handler for SIGUSR2 (on {@code kill -USR2}
 * it appends node descriptions and metrics to files in the working directory). On Linux, HotSpot suspends
 * threads with SIGUSR2, and JFR's sampler does that to a running thread every 10-20 ms: with jraft's handler
 * in place those signals reach jraft instead, so JFR records no samples, and every one of them makes jraft
 * describe all of the node's groups into a file.
 *
 * <p>So, before jraft loads, this takes the JVM's own handler, lets jraft install its one, and puts the JVM's
 * back. The price: {@code kill -USR2} no longer dumps jraft's files; like any JVM, the process dies of it. A
 * JFR recording started with the JVM can still hit jraft's handler in the moment between jraft taking the
 * signal and this putting it back (one stray {@code thread_pool_metrics.log} file). sun.misc.Signal because
 * the JDK has no public API for signals.
 */
final class JvmSignals {

    private static final Logger LOG = LoggerFactory.getLogger(JvmSignals.class);
    private static final String JRAFT_NODE = "com.alipay.sofa.jraft.core.NodeImpl";
    private static final String JRAFT_HANDLER = "com.alipay.sofa.jraft.util.SignalHelper$SignalHandlerAdapter";

    private static boolean done;

    private JvmSignals() {
    }

    /** Loads jraft's node class with SIGUSR2 left to the JVM; once per JVM, before any jraft node exists. */
    static synchronized void loadJraftKeepingUsr2() {
        if (done) {
            return;
        }
        done = true;
        Signal usr2 = new Signal("USR2");
        SignalHandler jvm;
        try {
            jvm = Signal.handle(usr2, sig -> { });
        } catch (IllegalArgumentException reserved) {
            initialize(JRAFT_NODE); // the JVM keeps SIGUSR2 to itself here: jraft's handler cannot take it either
            return;
        }
        try {
            initialize(JRAFT_NODE);
        } finally {
            Signal.handle(usr2, jvm);
            if (jvm.getClass().getName().equals(JRAFT_HANDLER)) {
                LOG.warn("jraft took SIGUSR2 before the server started: JFR loses its samples in this JVM");
            }
        }
    }

    private static void initialize(String className) {
        try {
            Class.forName(className, true, JvmSignals.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("jraft-core is not on the class path: " + className, e);
        }
    }
}

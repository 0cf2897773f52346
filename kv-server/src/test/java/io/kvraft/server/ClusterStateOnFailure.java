package io.kvraft.server;

import io.kvraft.server.launch.ProcessCluster;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.concurrent.TimeoutException;

/**
 * Registered for every test of this module (META-INF/services, autodetection on in
 * junit-platform.properties). When a test fails while clusters are up, prints each node's state;
 * when it hit its timeout ({@code junit.jupiter.execution.timeout.default}), the failure itself
 * carries the nodes' state and this JVM's threads, so a hung test says where it hung, and the clusters
 * are closed (the abandoned test thread cannot close them).
 */
public final class ClusterStateOnFailure implements TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler {

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
        throw withState(context, failure);
    }

    @Override
    public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
        throw withState(context, failure);
    }

    @Override
    public void handleAfterEachMethodExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
        throw withState(context, failure);
    }

    /** A cluster started once per class ({@code @BeforeAll}) that hangs or fails says so too. */
    @Override
    public void handleBeforeAllMethodExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
        throw withState(context, failure);
    }

    @Override
    public void handleAfterAllMethodExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
        throw withState(context, failure);
    }

    private static Throwable withState(ExtensionContext context, Throwable failure) {
        String state = state();
        if (failure instanceof TimeoutException) {
            AssertionError e = new AssertionError(context.getDisplayName() + ": " + failure.getMessage()
                    + "\n" + state + threads(), failure);
            System.out.println(e.getMessage());
            closeAll(); // the abandoned test thread cannot: free the ports and CPU for the tests that follow
            return e;
        }
        if (!state.isEmpty()) {
            System.out.println(context.getDisplayName() + " failed with clusters up:\n" + state);
        }
        return failure;
    }

    /** Every open cluster of this JVM, in-process and process, node by node; empty when none is up. */
    static String state() {
        StringBuilder b = new StringBuilder();
        for (InProcessCluster c : InProcessCluster.open()) {
            b.append("-- in-process cluster (region ids, L = led here, @ the leader each node knows):\n")
                    .append(c.describe());
        }
        for (ProcessCluster c : ProcessCluster.open()) {
            b.append("-- process cluster in ").append(c.dataRoot()).append(":\n").append(c.describe(40));
        }
        return b.toString();
    }

    static String threads() {
        StringBuilder b = new StringBuilder("-- threads of the test JVM:\n");
        for (ThreadInfo t : ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
            b.append(t); // ThreadInfo prints the first frames of each stack
        }
        return b.toString();
    }

    private static void closeAll() {
        InProcessCluster.open().forEach(InProcessCluster::close);
        ProcessCluster.open().forEach(ProcessCluster::close);
    }
}

package io.kvraft.benchmark;

import io.kvraft.server.launch.ProcessCluster;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.concurrent.TimeoutException;

/**
 * Registered for every test of this module (META-INF/services). A test that hit its timeout
 * ({@code junit.jupiter.execution.timeout.default}) fails with the state of the server processes still
 * up (pid, alive, the end of each node's log) and this JVM's threads; another failure with clusters up
 * prints their state.
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
        StringBuilder state = new StringBuilder();
        for (ProcessCluster c : ProcessCluster.open()) {
            state.append("-- process cluster in ").append(c.dataRoot()).append(":\n").append(c.describe(40));
        }
        if (failure instanceof TimeoutException) {
            StringBuilder threads = new StringBuilder("-- threads of the test JVM:\n");
            for (ThreadInfo t : ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
                threads.append(t);
            }
            AssertionError e = new AssertionError(context.getDisplayName() + ": " + failure.getMessage() + "\n" + state
                    + threads, failure);
            System.out.println(e.getMessage());
            closeAll(); // the abandoned test thread cannot: free the ports and CPU for the tests that follow
            return e;
        }
        if (state.length() > 0) {
            System.out.println(context.getDisplayName() + " failed with clusters up:\n" + state);
        }
        return failure;
    }

    private static void closeAll() {
        ProcessCluster.open().forEach(ProcessCluster::close);
    }
}

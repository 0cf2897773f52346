package io.kvraft.server;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What SIGTERM (and SIGINT) do to a running node: the first signal starts {@link KvServer#shutdownGracefully}
 * and the process exits 0 when it is done; a second signal, or the shutdown outlasting its timeout, halts
 * the process at once with exit code 1. The JVM's own handling would exit 143 and ignore a second signal,
 * hence a signal handler (sun.misc.Signal: the JDK has no public API for it). A shutdown hook covers any
 * other way the JVM is asked to exit.
 */
final class GracefulShutdown {

    static final int EXIT_FORCED = 1;

    private static final Logger LOG = LoggerFactory.getLogger(GracefulShutdown.class);

    private final KvServer server;
    private final long timeoutMs;
    private final AtomicInteger requests = new AtomicInteger();

    private GracefulShutdown(KvServer server, long timeoutMs) {
        this.server = server;
        this.timeoutMs = timeoutMs;
    }

    /** Installs the signal handlers and the shutdown hook for {@code server}. */
    static void install(KvServer server, long timeoutMs) {
        GracefulShutdown g = new GracefulShutdown(server, timeoutMs);
        for (String name : new String[]{"TERM", "INT"}) {
            try {
                Signal.handle(new Signal(name), g::onSignal);
            } catch (IllegalArgumentException inUse) {
                // e.g. -Xrs: the shutdown hook below still closes the node, with the JVM's exit code
                LOG.warn("cannot handle SIG{}: {}", name, inUse.getMessage());
            }
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (g.requests.getAndIncrement() == 0) {
                g.run("exit");
            }
        }, "kv-shutdown-hook"));
    }

    private void onSignal(Signal sig) {
        if (requests.getAndIncrement() > 0) {
            LOG.warn("second SIG{}: halting now", sig.getName());
            Runtime.getRuntime().halt(EXIT_FORCED);
        }
        Thread t = new Thread(() -> {
            run("SIG" + sig.getName());
            System.exit(0);
        }, "kv-shutdown");
        t.start();
    }

    private void run(String why) {
        LOG.info("{}: shutting down, at most {} ms", why, timeoutMs);
        CompletableFuture.delayedExecutor(timeoutMs, TimeUnit.MILLISECONDS).execute(() -> {
            LOG.error("shutdown did not finish within shutdown.timeoutMs {} ms: halting", timeoutMs);
            Runtime.getRuntime().halt(EXIT_FORCED);
        });
        try {
            server.shutdownGracefully(timeoutMs);
        } catch (RuntimeException e) {
            LOG.error("shutdown failed: {}", e.toString());
        }
    }
}

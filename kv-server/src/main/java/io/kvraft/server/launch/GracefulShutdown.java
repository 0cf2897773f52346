package io.kvraft.server.launch;

import io.kvraft.server.KvServer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * What SIGTERM (and SIGINT) do to a running node: the first signal starts {@link KvServer#shutdownGracefully}
 * and the process exits 0 when it is done; a second signal, or the shutdown outlasting its timeout, halts
 * the process at once with exit code 1. The JVM's own handling would exit 143 and ignore a second signal,
 * hence a signal handler (sun.misc.Signal: the JDK has no public API for it). A shutdown hook covers any
 * other way the JVM is asked to exit.
 *
 * <p>The handlers go in before the node starts: a SIGTERM that arrives while it starts (a supervisor that gives up,
 * a test that is quick) is held and acted on once the node is up, rather than killing the JVM with 143.
 */
final class GracefulShutdown {

    static final int EXIT_FORCED = 1;

    private static final Logger LOG = LoggerFactory.getLogger(GracefulShutdown.class);

    /** What the shutdown stops: {@link KvServer#shutdownGracefully}. */
    interface Node {
        void shutdownGracefully(long timeoutMs);
    }

    private final long timeoutMs;
    /** Ends the process after a shutdown that finished: System::exit. */
    private final IntConsumer exit;
    /** Ends the process at once, with no shutdown hook run: Runtime.halt. */
    private final IntConsumer halt;
    private final AtomicInteger requests = new AtomicInteger();
    private Node server; // guarded by this
    private String pending; // guarded by this: the signal that came before the server did

    GracefulShutdown(long timeoutMs, IntConsumer exit, IntConsumer halt) {
        this.timeoutMs = timeoutMs;
        this.exit = exit;
        this.halt = halt;
    }

    /** Installs the signal handlers and the shutdown hook, before the node starts; see {@link #attach}. */
    static GracefulShutdown install(long timeoutMs) {
        GracefulShutdown g = new GracefulShutdown(timeoutMs, System::exit, Runtime.getRuntime()::halt);
        for (String name : new String[]{"TERM", "INT"}) {
            try {
                Signal.handle(new Signal(name), g::onSignal);
            } catch (IllegalArgumentException inUse) {
                // e.g. -Xrs: the shutdown hook below still closes the node, with the JVM's exit code
                LOG.warn("cannot handle SIG{}: {}", name, inUse.getMessage());
            }
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            Node s = g.server();
            if (s != null && g.requests.getAndIncrement() == 0) {
                g.run(s, "exit");
            }
        }, "kv-shutdown-hook"));
        return g;
    }

    /** The node is up: from now on a signal shuts it down, and one that came while it started does so now. */
    void attach(Node started) {
        String held;
        synchronized (this) {
            server = started;
            held = pending;
        }
        if (held != null) {
            shutDownInBackground(started, held);
        }
    }

    private synchronized Node server() {
        return server;
    }

    private void onSignal(Signal sig) {
        onSignal("SIG" + sig.getName());
    }

    /** A SIGTERM or SIGINT, named {@code why}: the first shuts the node down, a second halts the process. */
    void onSignal(String why) {
        if (requests.getAndIncrement() > 0) {
            LOG.warn("second {}: halting now", why);
            halt.accept(EXIT_FORCED);
            return;
        }
        Node s;
        synchronized (this) {
            s = server;
            if (s == null) {
                pending = why;
                LOG.info("{} while the node starts: shutting down once it has started", why);
                return;
            }
        }
        shutDownInBackground(s, why);
    }

    private void shutDownInBackground(Node s, String why) {
        Thread t = new Thread(() -> {
            run(s, why);
            exit.accept(0);
        }, "kv-shutdown");
        t.start();
    }

    private void run(Node server, String why) {
        LOG.info("{}: shutting down, at most {} ms", why, timeoutMs);
        CompletableFuture.delayedExecutor(timeoutMs, TimeUnit.MILLISECONDS).execute(() -> {
            LOG.error("shutdown did not finish within shutdown.timeoutMs {} ms: halting", timeoutMs);
            halt.accept(EXIT_FORCED);
        });
        try {
            server.shutdownGracefully(timeoutMs);
        } catch (RuntimeException e) {
            LOG.error("shutdown failed: {}", e.toString());
        }
    }
}

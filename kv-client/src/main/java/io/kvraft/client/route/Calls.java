package io.kvraft.client.route;

import com.google.protobuf.Message;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.rpc.Transport;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * How the client's parts reach the nodes: one transport, the request and operation timeouts, and the timer retries and
 * polls wait on. A client and the views made of it share one; closing it closes the transport and stops the timer, so
 * every later call fails.
 */
public final class Calls implements AutoCloseable {

    private final Transport transport;
    private final long requestTimeoutMs;
    private final long operationTimeoutMs;
    private final ScheduledExecutorService timer;

    /** The transport of {@code config}'s TLS settings, its timeouts, and a timer thread of its own. */
    public static Calls open(ClientConfig config) {
        return new Calls(new Transport(config.tls()), config.requestTimeoutMs(), config.operationTimeoutMs());
    }

    public Calls(Transport transport, long requestTimeoutMs, long operationTimeoutMs) {
        this.transport = transport;
        this.requestTimeoutMs = requestTimeoutMs;
        this.operationTimeoutMs = operationTimeoutMs;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kv-client-retry");
            t.setDaemon(true);
            return t;
        });
    }

    public Transport transport() {
        return transport;
    }

    /** The wait for one RPC's answer. */
    public long requestTimeoutMs() {
        return requestTimeoutMs;
    }

    /** The deadline of one operation across all its retries. */
    public long operationTimeoutMs() {
        return operationTimeoutMs;
    }

    /** The deadline of an operation that starts now ({@link System#nanoTime}). */
    public long deadline() {
        return System.nanoTime() + operationTimeoutMs * 1_000_000L;
    }

    /** Sends {@code request} to {@code target}, waiting at most the request timeout for the answer. */
    public <R extends Message> CompletableFuture<R> call(String target, Message request) {
        return transport.call(target, request, requestTimeoutMs);
    }

    /**
     * Asks each of {@code nodes} {@code request} at once; completes once all answered or failed, with each answer by
     * host:port (null for a node that did not answer).
     */
    public <R extends Message> CompletableFuture<Map<String, R>> askAll(List<String> nodes, Message request) {
        Map<String, CompletableFuture<R>> asked = new TreeMap<>();
        for (String node : nodes) {
            asked.put(node, call(node, request));
        }
        return CompletableFuture.allOf(asked.values().stream().map(f -> f.handle((r, e) -> null))
                .toArray(CompletableFuture[]::new)).thenApply(v -> {
                    Map<String, R> out = new TreeMap<>();
                    asked.forEach((node, f) -> out.put(node, f.isCompletedExceptionally() ? null : f.join()));
                    return out;
                });
    }

    /** Runs {@code task} after {@code delayNanos} on the timer (at once when 0); false once closed. */
    public boolean later(Runnable task, long delayNanos) {
        if (delayNanos == 0) {
            task.run();
            return true;
        }
        try {
            timer.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
            return true;
        } catch (RejectedExecutionException closed) {
            return false;
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
        transport.close();
    }
}

package io.kvraft.server;

import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.route.RetryPolicy;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Writes a test may simply send again when their outcome is unknown (a leader stepped down under them, as
 * happens on a loaded machine with the in-process clusters' 1 s election timeout): putting the same value,
 * or deleting the same key, twice leaves the same state. The client never retries such a write itself,
 * since in general a second copy could undo another client's write; these tests have no other writer.
 */
public final class IdempotentWrites {

    private static final int TRIES = 5;

    private IdempotentWrites() {
    }

    public static CompletableFuture<Void> put(KvClient client, byte[] key, byte[] value) {
        return untilKnown(() -> client.put(key, value), TRIES);
    }

    public static CompletableFuture<Void> delete(KvClient client, byte[] key) {
        return untilKnown(() -> client.delete(key).thenApply(existed -> null), TRIES);
    }

    private static CompletableFuture<Void> untilKnown(Supplier<CompletableFuture<Void>> write, int tries) {
        return write.get().handle((ok, e) -> {
            if (e == null) {
                return CompletableFuture.<Void>completedFuture(null);
            }
            if (tries > 1 && RetryPolicy.outcomeUnknown(KvException.unwrap(e).code())) {
                return untilKnown(write, tries - 1);
            }
            return CompletableFuture.<Void>failedFuture(e);
        }).thenCompose(f -> f);
    }
}

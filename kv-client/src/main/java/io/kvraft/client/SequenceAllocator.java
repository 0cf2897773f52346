package io.kvraft.client;

import io.kvraft.common.KvException;
import java.util.concurrent.CompletableFuture;

/**
 * Hands out the numbers of one sequence one at a time, at memory speed: it takes a block of
 * {@code blockSize} numbers with {@link KvClient#getSequence} and, when a quarter of the block is left,
 * fetches the next block in the background, so callers wait for the cluster only when they outrun a
 * whole block in one round trip. Numbers are unique cluster-wide and increase within one allocator;
 * numbers of a block not handed out when the allocator is dropped are skipped, never reused.
 * Thread-safe.
 */
public final class SequenceAllocator {

    private final KvClient client;
    private final byte[] seqKey;
    private final long blockSize;
    private final long refillAt;
    private long next;
    private long end;
    /** The next block, fetched ahead; null when none is on its way. */
    private CompletableFuture<SequenceRange> ahead;

    /**
     * @param blockSize numbers per block, 1 to 2^40: larger blocks mean fewer log entries and larger gaps
     *                  when an allocator is dropped
     */
    public SequenceAllocator(KvClient client, byte[] seqKey, long blockSize) {
        if (blockSize < 1 || blockSize > RoutingKvClient.MAX_SEQUENCE_STEP) {
            throw new KvException(io.kvraft.common.ErrorCode.INVALID_ARGUMENT,
                    "blockSize must be 1 to " + RoutingKvClient.MAX_SEQUENCE_STEP + ", got " + blockSize);
        }
        this.client = client;
        this.seqKey = seqKey.clone();
        this.blockSize = blockSize;
        this.refillAt = blockSize / 4;
    }

    /**
     * The next number. Blocks only when the block is used up and the next one has not arrived; throws the
     * {@link KvException} of a failed fetch (a later call fetches again).
     */
    public synchronized long next() {
        if (next == end) {
            CompletableFuture<SequenceRange> pending = ahead != null ? ahead : client.getSequence(seqKey, blockSize);
            ahead = null;
            SequenceRange block = KvClient.sync(pending);
            next = block.start();
            end = block.end();
        }
        long id = next++;
        if (ahead == null && end - next <= refillAt) {
            ahead = client.getSequence(seqKey, blockSize);
        }
        return id;
    }
}

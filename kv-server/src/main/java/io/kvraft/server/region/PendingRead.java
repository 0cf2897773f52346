package io.kvraft.server.region;

import io.kvraft.common.proto.KvProto.Error;

/** A read waiting for a log entry proposed after it arrived, or for a ReadIndex; then served from the store. */
public interface PendingRead {
    /** Reads the store and answers; the caller has established that the store is fresh enough. */
    void serve();

    /** Answers with {@code error} instead. */
    void fail(Error error);
}

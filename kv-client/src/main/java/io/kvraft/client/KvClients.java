package io.kvraft.client;

import io.kvraft.client.config.ClientConfig;

/** Makes clients. */
public final class KvClients {

    private KvClients() {
    }

    /** A client of the cluster named by {@code config.servers()}; it learns the route table on first use. */
    public static KvClient connect(ClientConfig config) {
        throw new UnsupportedOperationException("not yet");
    }
}

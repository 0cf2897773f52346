package io.kvraft.server.store;

import java.nio.file.Path;

class MemoryStoreTest extends KvStoreContractTest {

    @Override
    protected KvStore openStore(Path dir) {
        return new MemoryStore();
    }
}

package io.kvraft.client.backup;

import java.io.IOException;

/** A restore refused because the cluster already holds keys (and --force was not given). */
public final class TargetNotEmptyException extends IOException {

    public TargetNotEmptyException(String message) {
        super(message);
    }
}

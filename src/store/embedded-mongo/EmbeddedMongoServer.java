import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.List;

import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * The embedded database of `npm start` and `npm test`: mongo-java-server on a loopback port.
 *
 * <p>Arguments: {@code memory} (the memory backend) or {@code h2 <file> <commitIntervalMs>} (the H2 MVStore
 * backend, its file opened here so that the interval of its background commits is ours to set: an
 * acknowledged write reaches the file within that interval, as MongoDB's journal does within 100 ms).
 *
 * <p>It binds 127.0.0.1 on a port of the system's choosing and prints {@code listening <port>} on stdout.
 * It reports MongoDB 5.0 with wire version 13, the oldest the Node driver 7 accepts (the library's own
 * versions report 8 or less). It ends, committing the store, on SIGTERM or SIGINT and when its standard
 * input closes, which happens however its parent process ends (even on SIGKILL): it never outlives it.
 */
public final class EmbeddedMongoServer {

    /** MongoDB 5.0 as the Node driver sees it (wire version 13). */
    private static final MongoVersion MONGODB_5_0 = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(5, 0, 0);
        }

        @Override
        public int getWireVersion() {
            return 13;
        }
    };

    private EmbeddedMongoServer() {
    }

    public static void main(String[] args) throws IOException {
        MongoBackend backend = openBackend(args);
        backend.version(MONGODB_5_0);
        MongoServer server = new MongoServer(backend);
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow, "embedded-mongo-shutdown"));
        System.out.println("listening " + server.getLocalAddress().getPort());
        System.out.flush();

        InputStream parent = System.in;
        while (parent.read() != -1) {
            // The parent writes nothing; end of input means it has gone.
        }
        System.exit(0);
    }

    private static MongoBackend openBackend(String[] args) {
        if (args.length == 1 && args[0].equals("memory")) {
            return new MemoryBackend();
        }
        if (args.length == 3 && args[0].equals("h2")) {
            MVStore store = new MVStore.Builder().fileName(args[1]).compress().open();
            store.setAutoCommitDelay(Integer.parseInt(args[2]));
            return new H2Backend(store);
        }
        System.err.println("usage: EmbeddedMongoServer memory | h2 <file> <commitIntervalMs>");
        System.exit(2);
        return null;
    }
}

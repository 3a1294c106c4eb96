import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

import de.bwaldvogel.mongo.bson.Document;
import io.netty.channel.Channel;
import io.netty.util.AttributeKey;

/**
 * The commands the embedded database has handled, counted by the application that sent them (the name a client
 * gives in its handshake, {@code client.application.name}, as MongoDB's logs show it) and by command and collection
 * ({@code "insert messages"}: the command's name and, when it is a string, its value), with the time spent
 * handling them.
 *
 * <p>The benchmarks read them with the command {@code {embeddedCommandCounts: "<application>"}} (any database),
 * which answers {@code {commands: [{name, count, nanos}, …], ok: 1}} for that application's commands since the
 * server started, and is not counted itself. They counted through a relay in front of the database before: a
 * second hop for every command, whose CPU (about a twentieth of a send's) and latency the measured service paid
 * and a deployment does not. A bulk write is one command however many documents it carries.
 */
final class CommandCounts {

    /** The command that reads the counts. */
    static final String COMMAND = "embeddedCommandCounts";

    /** The application a connection's handshake named (absent until then, or when it named none). */
    private static final AttributeKey<String> APPLICATION = AttributeKey.valueOf("embedded-mongo.application");

    /** Counts by application, then by command and collection. */
    private static final Map<String, Map<String, Tally>> TALLIES = new ConcurrentHashMap<>();

    private record Tally(LongAdder count, LongAdder nanos) {
    }

    private CommandCounts() {
    }

    /**
     * Handles {@code command} with {@code next} (the library's handling), counting it for the connection's
     * application; answers the counts command itself.
     */
    static Document handle(Channel channel, String command, Document query, Supplier<Document> next) {
        if (command.equals(COMMAND)) {
            return report(String.valueOf(query.get(COMMAND)));
        }
        if (query.get("client") instanceof Document client && client.get("application") instanceof Document application
            && application.get("name") instanceof String name) {
            channel.attr(APPLICATION).set(name);
        }
        String application = channel.attr(APPLICATION).get();
        long start = System.nanoTime();
        try {
            return next.get();
        } finally {
            if (application != null) {
                String key = query.get(command) instanceof String collection ? command + " " + collection : command;
                Tally tally = TALLIES.computeIfAbsent(application, a -> new ConcurrentHashMap<>())
                    .computeIfAbsent(key, k -> new Tally(new LongAdder(), new LongAdder()));
                tally.count().increment();
                tally.nanos().add(System.nanoTime() - start);
            }
        }
    }

    private static Document report(String application) {
        List<Document> commands = new ArrayList<>();
        TALLIES.getOrDefault(application, Map.of()).forEach((key, tally) -> {
            Document command = new Document("name", key);
            command.put("count", tally.count().sum());
            command.put("nanos", tally.nanos().sum());
            commands.add(command);
        });
        Document reply = new Document("commands", commands);
        reply.put("ok", 1.0);
        return reply;
    }
}

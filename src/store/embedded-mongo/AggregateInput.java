import java.util.List;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.bson.Document;

/**
 * What an aggregate reads of its collection. The library runs every pipeline over every document of the collection
 * ({@code Aggregation.runStages} over {@code queryAllAsStream}), also one that starts with a {@code $match} an index
 * holds: the service's gauges of every sender's queue (the pending messages matched, then grouped by sender) read a
 * collection of 28,000 messages whole at each {@code /metrics} scrape on H2, and dispatch stalled for one to two
 * seconds. For an aggregate whose first stage is a {@code $match}, the collection's read for it is that query
 * instead, run as a find is (by an index that holds it, {@link SecondaryIndex}); the pipeline stays the library's
 * and unchanged, and its {@code $match} keeps exactly the documents read.
 */
final class AggregateInput {

    /** Options with which the library reads for itself ({@code let}: a first {@code $match} may use its variables). */
    private static final Set<String> DECLINED_OPTIONS = Set.of("explain", "collation", "hint", "let");

    /** The collection whose next read of all its documents is the aggregate's under way on this thread, and its first {@code $match}. */
    private record Pending(MongoCollection<?> collection, Document match) {
    }

    private static final ThreadLocal<Pending> PENDING = new ThreadLocal<>();

    private AggregateInput() {
    }

    /**
     * Answers {@code command} with {@code answer}; when it is an aggregate whose first stage is a {@code $match}, its
     * collection's read of all its documents meanwhile reads that query instead ({@link #read}).
     *
     * @param collections the database's collection of that name, or null when there is none
     */
    static Document answering(String command, Document query, Function<String, MongoCollection<?>> collections, Supplier<Document> answer) {
        if (!command.equalsIgnoreCase("aggregate") || !(query.get(command) instanceof String collectionName)
            || !(query.get("pipeline") instanceof List<?> pipeline) || pipeline.isEmpty()
            || !(pipeline.get(0) instanceof Document first) || first.size() != 1 || !(first.get("$match") instanceof Document match)
            || query.keySet().stream().anyMatch(DECLINED_OPTIONS::contains)) {
            return answer.get();
        }
        MongoCollection<?> collection = collections.apply(collectionName);
        if (collection == null) {
            return answer.get();
        }
        PENDING.set(new Pending(collection, match));
        try {
            return answer.get();
        } finally {
            PENDING.remove();
        }
    }

    /**
     * The documents {@code collection} reads when asked for all of them: those of the aggregate's first
     * {@code $match} when this is the read of the aggregate under way on this thread (its first read of the
     * collection, once), else {@code all}.
     */
    static Stream<Document> read(MongoCollection<?> collection, Supplier<Stream<Document>> all) {
        Pending pending = PENDING.get();
        if (pending == null || pending.collection() != collection) {
            return all.get();
        }
        PENDING.remove();
        return collection.handleQueryAsStream(pending.match());
    }
}

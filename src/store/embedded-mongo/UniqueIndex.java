import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.AbstractUniqueIndex;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.bson.Document;

/**
 * A unique index of the H2 backend ({@code _id} of every collection, and {@code createIndex} with
 * {@code unique}) kept in memory, as the memory backend keeps its own: positions by key in a hash map, rebuilt
 * from the documents when the collection opens (the library fills an empty index it adds), so it is never out
 * of step with them. The library's H2 backend keeps each in a map of the store instead: an insert at a random key
 * (a UUID) dirtied a page of it, which the store's writer encoded whole at the next commit, and a look-up that
 * missed the page cache read and decoded a page (JFR under the webhook benchmark: the writer about 38% and page
 * reads about 18% of the database's sampled CPU, with the documents' own pages). The uniqueness rules are the
 * library's ({@link AbstractUniqueIndex}); a store written before keeps such maps, which are removed on open. An
 * update that changes none of the index's fields (every update, for {@code _id}) skips the library's check and
 * re-keying of the document.
 */
final class UniqueIndex<P> extends AbstractUniqueIndex<P> {

    private final Map<KeyValue, P> positions = new ConcurrentHashMap<>();
    /** Each key's path, split at its dots once. */
    private final String[][] paths;

    UniqueIndex(String name, List<IndexKey> keys, boolean sparse) {
        super(name, keys, sparse);
        paths = keys.stream().map(key -> key.getKey().split("\\.", -1)).toArray(String[][]::new);
    }

    @Override
    public void checkUpdate(Document oldDocument, Document newDocument, MongoCollection<P> collection) {
        if (!SecondaryIndex.untouched(oldDocument, newDocument, paths)) {
            super.checkUpdate(oldDocument, newDocument, collection);
        }
    }

    @Override
    public void updateInPlace(Document oldDocument, Document newDocument, P position, MongoCollection<P> collection) {
        if (!SecondaryIndex.untouched(oldDocument, newDocument, paths)) {
            super.updateInPlace(oldDocument, newDocument, position, collection);
        }
    }

    @Override
    protected P removeDocument(KeyValue key) {
        return positions.remove(key);
    }

    @Override
    protected boolean putKeyPosition(KeyValue key, P position) {
        return positions.putIfAbsent(key, position) == null;
    }

    @Override
    protected Iterable<Map.Entry<KeyValue, P>> getIterable() {
        return positions.entrySet();
    }

    @Override
    protected P getPosition(KeyValue key) {
        return positions.get(key);
    }

    @Override
    public long getCount() {
        return positions.size();
    }

    @Override
    public boolean isEmpty() {
        return positions.isEmpty();
    }

    @Override
    public long getDataSize() {
        return getCount();
    }

    @Override
    public void drop() {
        positions.clear();
    }
}

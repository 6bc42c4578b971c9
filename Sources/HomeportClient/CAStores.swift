#if canImport(CCurl)
    import CCurl
    import Synchronization

    /// CA stores loaded once per process, by file, and shared by every transfer: libcurl would
    /// otherwise parse its CA file again for each new connection (about 50 ms for the system's
    /// bundle on a small machine, paid by every probe of an HTTPS address). A file is read when
    /// first used; a change to it later in the process's life is not seen, as with libcurl's own
    /// cache.
    enum CAStores {
        /// A loaded store, kept for the process's life.
        final class Store: @unchecked Sendable {
            let pointer: OpaquePointer
            init(_ pointer: OpaquePointer) { self.pointer = pointer }
        }

        private static let loaded = Mutex<[String: Store?]>([:])

        /// The store of `path`; `nil` when it cannot be read (libcurl then reads the file itself,
        /// and says what is wrong with it).
        static func store(for path: String) -> Store? {
            guard !path.isEmpty else { return nil }
            return loaded.withLock { stores in
                if let known = stores[path] { return known }
                let store = homeport_ca_store_load(path).map(Store.init)
                stores[path] = store
                return store
            }
        }
    }
#endif

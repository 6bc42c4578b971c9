import Foundation
import HomeportWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One enrolled server: its identity, its account, and every address that reaches it.
public struct ServerRecord: Codable, Hashable, Sendable {
    /// The installation's id once known (the key the server is stored under).
    public var instanceID: InstanceID?
    /// The product name it announced (control characters removed).
    public var product: String?
    /// The protocol version it announced; `nil` in records written before it was kept (version 1).
    public var protocolVersion: Int?
    /// The account signed in there.
    public var email: String
    /// The address the user signed in with.
    public var primary: ServerAddress
    /// Further addresses, in the user's order of preference.
    public var alternatives: [Alternative]
    /// The address the last successful choice took.
    public var lastWinner: String?
    /// Whether the account is signed out (the server refused the token, or the user signed out).
    public var signedOut: Bool
    /// The network path the user signed in on: a plain-HTTP primary keeps its trust only there.
    public var signedInPath: String
    /// How long each address took to answer the identity probe on each network path, in
    /// seconds (`"<path> <url>"` → seconds): the preference window for an address is derived from
    /// its own round trip on the path. `nil` in records written before it was kept.
    public var roundTrips: [String: Double]?

    /// Creates a record.
    public init(
        instanceID: InstanceID?, product: String?, email: String, primary: ServerAddress, alternatives: [Alternative],
        lastWinner: String?, signedOut: Bool, signedInPath: String, protocolVersion: Int? = nil
    ) {
        self.instanceID = instanceID
        self.product = product
        self.protocolVersion = protocolVersion
        self.email = email
        self.primary = primary
        self.alternatives = alternatives
        self.lastWinner = lastWinner
        self.signedOut = signedOut
        self.signedInPath = signedInPath
    }

    /// The round trip `url` took on `path`, as last stored.
    public func roundTrip(of url: String, on path: String) -> Duration? {
        roundTrips?[path + " " + url].map { .nanoseconds(Int64($0 * 1e9)) }
    }

    /// The key the server is stored and addressed under: its instance id, or its primary URL
    /// for an older server without the identity route.
    public var key: String { instanceID?.description ?? primary.url }

    /// What an address must answer to `GET /api/v1/server-identity` to be this server: the
    /// enrolled id, product and protocol version. `nil` for a server without an identity.
    public var expectedIdentity: ServerIdentity? {
        instanceID.map {
            ServerIdentity(
                product: product ?? HomeportProtocol.defaultProduct,
                protocolVersion: protocolVersion ?? HomeportProtocol.version, instanceId: $0)
        }
    }

    /// An alternative address and the network paths it was verified on.
    public struct Alternative: Codable, Hashable, Sendable {
        /// The address.
        public var address: ServerAddress
        /// Network paths on which it answered with the enrolled id (path id → when).
        public var verifiedPaths: [String: Date]

        /// Whether it was ever verified (and so takes part in choosing an address).
        public var isVerified: Bool { !verifiedPaths.isEmpty }

        /// Creates an alternative.
        public init(address: ServerAddress, verifiedPaths: [String: Date]) {
            self.address = address
            self.verifiedPaths = verifiedPaths
        }
    }
}

/// The enrolled servers, persisted as JSON with write-then-rename under a directory the app
/// supplies, next to what the client keeps per server for notifications: their catalogues and the
/// push registrations made with them.
public final class ServerDirectory: @unchecked Sendable {
    /// The file.
    public let path: String
    /// One notification catalogue per server (`catalogues.json` in the same directory).
    public let catalogues: CatalogueStore
    /// The device's push token and the registration made with each server (`push-devices.json`).
    public let devices: DeviceRegistry
    private let lock = NSLock()
    private var servers: [ServerRecord]

    /// Loads the directory from `directory/servers.json` (empty when the file does not exist),
    /// with the catalogues and push registrations kept beside it.
    ///
    /// `directory` is created with mode 0700 when it does not exist. An existing one is used only
    /// when it belongs to this user and nobody else can write to it (its mode is never changed);
    /// otherwise this throws ``ClientError/unsafeDirectory(path:reason:)``.
    public init(directory: String) throws {
        try OwnerOnlyDirectory.prepare(directory)
        path = directory + "/servers.json"
        catalogues = try CatalogueStore(directory: directory)
        devices = try DeviceRegistry(directory: directory)
        servers = try Self.read(path)
    }

    /// The records stored at `path` (none when there is no file yet).
    private static func read(_ path: String) throws -> [ServerRecord] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode([ServerRecord].self, from: data)
        } catch {
            throw ClientError.badAnswer(address: path, detail: "the server directory is damaged: \(error)")
        }
    }

    /// Every server.
    public var all: [ServerRecord] { lock.withLock { servers } }

    /// The server with this key.
    public func server(_ key: String) -> ServerRecord? { lock.withLock { servers.first { $0.key == key } } }

    /// Finds a server by instance id, unique id prefix, or primary URL.
    public func find(_ text: String) throws -> ServerRecord {
        let all = self.all
        if let exact = all.first(where: { $0.key == text || $0.primary.url == text }) { return exact }
        if let normalized = try? ServerAddress(parsing: text, allowHTTP: true),
            let byURL = all.first(where: { $0.primary.url == normalized.url })
        {
            return byURL
        }
        let prefixed = all.filter { $0.instanceID?.description.hasPrefix(text.lowercased()) ?? false }
        if prefixed.count == 1 { return prefixed[0] }
        if prefixed.count > 1 { throw ClientError.ambiguousServer(text, candidates: prefixed.map(\.key)) }
        throw ClientError.unknownServer(text)
    }

    /// Inserts or replaces the record stored under `previousKey` (or under its own key), then saves.
    public func save(_ record: ServerRecord, replacing previousKey: String? = nil) throws {
        try mutate { servers in
            let key = previousKey ?? record.key
            servers.removeAll { $0.key == key || $0.key == record.key }
            servers.append(record)
        }
    }

    /// Reads, changes and saves the record stored under `key` in one step, so that a change made
    /// meanwhile (an address removed, the server removed) is never undone by a stale copy.
    /// Returns the saved record, or `nil` when there is no such record any more.
    @discardableResult
    public func update(_ key: String, _ change: (inout ServerRecord) -> Void) throws -> ServerRecord? {
        try mutate { servers in
            guard let index = servers.firstIndex(where: { $0.key == key }) else { return nil }
            change(&servers[index])
            return servers[index]
        }
    }

    /// Removes a server's record, then saves.
    public func remove(_ key: String) throws {
        try mutate { servers in servers.removeAll { $0.key == key } }
    }

    /// Changes the records as they are on disk now, under an exclusive lock on `servers.json.lock`
    /// that every process using this directory takes: two processes (a running `notifications
    /// watch`, a `homeport remove` in another terminal) never undo each other's changes.
    private func mutate<T>(_ change: (inout [ServerRecord]) throws -> T) throws -> T {
        try lock.withLock {
            let fd = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw ClientError.vault("cannot open \(path).lock: \(String(cString: strerror(errno)))")
            }
            // Closing the descriptor releases the lock, whatever happens below.
            defer { close(fd) }
            guard flock(fd, LOCK_EX) == 0 else {
                throw ClientError.vault("cannot lock \(path): \(String(cString: strerror(errno)))")
            }
            servers = try Self.read(path)
            let before = servers
            let result = try change(&servers)
            // Nothing changed, nothing written: a choice that confirms what is stored costs no
            // write (and no fsync) on the way to the request.
            if servers != before { try persist() }
            return result
        }
    }

    private func persist() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        try AtomicFile.write(try encoder.encode(servers), to: path)
    }
}

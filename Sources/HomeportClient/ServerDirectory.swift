import Foundation
import HomeportWire
import Synchronization

/// One enrolled server: its identity, its account, and every address that reaches it.
public struct ServerRecord: Codable, Hashable, Sendable {
    /// The installation's id once known (the key the server is stored under). When it changes
    /// (an identity reset), ``localID`` stays.
    public var instanceID: InstanceID? {
        willSet {
            pinLocalID()
            verifiedWinner = nil
        }
    }
    /// The product name it announced (control characters removed).
    public var product: String?
    /// The protocol version it announced; `nil` in records written before it was kept (version 1).
    public var protocolVersion: Int?
    /// The account signed in there.
    public var email: String
    /// The address the user signed in with.
    public var primary: ServerAddress {
        willSet {
            pinLocalID()
            verifiedWinner = nil
        }
    }
    /// Further addresses, in the user's order of preference.
    public var alternatives: [Alternative]
    /// The address the last successful choice took.
    public var lastWinner: String?
    /// Whether the account is signed out (the server refused the token, or the user signed out).
    public var signedOut: Bool
    /// The network path the user signed in on: a plain-HTTP primary keeps its trust only there.
    public var signedInPath: String
    /// The name the person gave the server on this device ("Books at home"), shown in a switcher
    /// and by every command; `nil` until they give one. Several servers of one product are told
    /// apart by it.
    public var label: String?
    /// How long each address took to answer the identity probe on each network path, in
    /// seconds (`"<path> <url>"` → seconds): the preference window for an address is derived from
    /// its own round trip on the path. `nil` in records written before it was kept.
    public var roundTrips: [String: Double]?
    /// The installation key this device pinned (``IdentityProof/writeKey(_:)``): learned from the
    /// address the user signed in at, or from the trusted primary of a record that had none.
    /// Once pinned, an address is the installation only if it proves this key; `nil` for a server
    /// without one (it proves nothing beyond its id).
    public var publicKey: String? {
        willSet { verifiedWinner = nil }
    }
    /// The HTTPS address the last race on a network path found answering as the installation,
    /// and when: a client started within its ``ClientConfiguration/winnerLifetime`` of that, on
    /// the same path, sends to it without probing first, as one client reuses its own winner. A
    /// transport failure, a change of identity, key, primary or addresses, and a network-path
    /// change forget it.
    var verifiedWinner: VerifiedWinner?
    /// ``localID`` once given or pinned; `nil` in a record written before it was kept.
    private var storedLocalID: UUID?

    /// This device's own handle for the server, fixed when it was enrolled: it stays the same when
    /// the server's ``key`` changes (an identity reset gives it a new instance id; an older
    /// server's key is its primary URL), so an app may keep it (`@SceneStorage`, a selection, a
    /// navigation path) and every call that names a server takes it. A record written before it
    /// was kept gets one derived from its key, kept from the first change on.
    public var localID: UUID { storedLocalID ?? Self.derivedLocalID(key) }

    private enum CodingKeys: String, CodingKey {
        case instanceID, product, protocolVersion, email, primary, alternatives, lastWinner, signedOut, signedInPath,
            label, roundTrips, publicKey, verifiedWinner
        case storedLocalID = "localID"
    }

    /// An address that answered as the installation on a network path, and when: by the wall
    /// clock, and in seconds since the machine started (`ProcessInfo.systemUptime`), which every
    /// process on it shares and no clock setting moves.
    struct VerifiedWinner: Codable, Hashable, Sendable {
        var url: String
        var path: String
        var at: Date
        /// `nil` in a record an older client wrote: not reused.
        var uptime: TimeInterval?

        /// How old it is now, by whichever clock says older (a clock set back makes it younger by
        /// neither); `nil` when either says it is from the future, or it has no time since boot,
        /// or the wall clock says it is older than the time since boot does by more than two
        /// seconds: the machine started again since (a quick restart, whose time since boot has
        /// caught up with the stored one), or slept, or its clock was set forward; it is probed
        /// again then.
        func age(now: Date = Date(), uptime current: TimeInterval = ProcessInfo.processInfo.systemUptime)
            -> TimeInterval?
        {
            guard let uptime else { return nil }
            let wall = now.timeIntervalSince(at)
            let sinceBoot = current - uptime
            guard wall >= 0, sinceBoot >= 0, wall - sinceBoot <= 2 else { return nil }
            return max(wall, sinceBoot)
        }
    }

    /// Takes `other`'s handle: the same server, saved over it.
    mutating func keepHandle(of other: ServerRecord) {
        storedLocalID = other.localID
    }

    /// Keeps the handle the record has now, before its key changes.
    private mutating func pinLocalID() {
        if storedLocalID == nil { storedLocalID = localID }
    }

    /// A handle for a record written before handles were kept: the same every time it is read
    /// (FNV-1a over the key, twice), so it holds until it is stored.
    static func derivedLocalID(_ key: String) -> UUID {
        func fnv(_ seed: UInt64) -> UInt64 {
            var hash = seed
            for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
            return hash
        }
        let (high, low) = (fnv(0xCBF2_9CE4_8422_2325), fnv(0x8422_2325_CBF2_9CE4))
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (8 * index))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (8 * index))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8: made by this library's own rule
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

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
        storedLocalID = UUID()
    }

    /// The round trip `url` took on `path`, as last stored.
    public func roundTrip(of url: String, on path: String) -> Duration? {
        roundTrips?[path + " " + url].map { .nanoseconds(Int64($0 * 1e9)) }
    }

    /// The key the server is stored and addressed under: its instance id, or its primary URL
    /// for an older server without the identity route.
    public var key: String { instanceID?.description ?? primary.url }

    /// How the server is named to a person: its label and key (`Books at home (6f1c…)`), or its
    /// key alone when it has no label.
    public var displayName: String { label.map { "\($0) (\(key))" } ?? key }

    /// What an address must answer to `GET /api/v1/server-identity` to be this server: the
    /// enrolled id, product and protocol version. `nil` for a server without an identity.
    public var expectedIdentity: ServerIdentity? {
        instanceID.map {
            ServerIdentity(
                product: product ?? HomeportProtocol.defaultProduct,
                protocolVersion: protocolVersion ?? HomeportProtocol.version, instanceId: $0, publicKey: publicKey)
        }
    }

    /// The pinned key's fingerprint as people compare it (`SHA256:…`, as `homeport-server
    /// identity show` prints it); `nil` when none is pinned.
    public var keyFingerprint: String? { publicKey.flatMap(InstallationKeyCheck.fingerprint) }

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
///
/// Several processes may use one directory at once (a running `notifications watch`, a
/// `homeport address remove` in another terminal): every change is a read-modify-write of the
/// file under a lock they all take, and every read sees the file as it is now.
public final class ServerDirectory: Sendable {
    /// The file.
    public var path: String { file.path }
    /// One notification catalogue per server (`catalogues.json` in the same directory).
    public let catalogues: CatalogueStore
    /// The device's push token and the registration made with each server (`push-devices.json`).
    public let devices: DeviceRegistry
    private let file: SharedJSONFile<[ServerRecord]>
    /// The listeners of ``changes``.
    private let listeners = Broadcast<[ServerRecord]>(buffer: 16)
    /// The changes made through this directory, counted under the file's lock, and the newest
    /// told: a change told late (its thread was slower) never follows a newer one.
    private let versions = Mutex((made: 0, told: 0))

    /// Loads the directory from `directory/servers.json` (empty when the file does not exist),
    /// with the catalogues and push registrations kept beside it.
    ///
    /// `directory` is created with mode 0700 when it does not exist. An existing one is used only
    /// when it belongs to this user and nobody else can write to it (its mode is never changed);
    /// otherwise this throws ``ClientError/unsafeDirectory(path:reason:)``. A change waits at most
    /// `lockTimeout` for another process that is changing the same file.
    public init(directory: String, lockTimeout: Duration = .seconds(10)) throws {
        try OwnerOnlyDirectory.prepare(directory)
        file = try SharedJSONFile(
            path: directory + "/servers.json", empty: [], what: "the server directory", lockTimeout: lockTimeout)
        catalogues = try CatalogueStore(directory: directory, lockTimeout: lockTimeout)
        devices = try DeviceRegistry(directory: directory, lockTimeout: lockTimeout)
    }

    /// Every server, as stored now.
    public var all: [ServerRecord] { file.value }

    /// The servers as stored now, then again after every change made through this directory (an
    /// enrolment, a sign-in or sign-out, an address added or moved, a label, a removal): what a
    /// server list observes instead of reading the directory again after each call. Each access
    /// is a stream of its own. A change another process makes is seen with the next change made
    /// here, or by reading ``all``.
    public var changes: AsyncStream<[ServerRecord]> { listeners.stream { self.all } }

    /// Changes the file, then tells the listeners when the servers are not what they were.
    private func changeFile<T>(_ body: (inout [ServerRecord]) throws -> T) throws -> T {
        var changed: (servers: [ServerRecord], version: Int)?
        let result = try file.change { servers in
            let before = servers
            let result = try body(&servers)
            if servers != before {
                let version = versions.withLock { versions in
                    versions.made += 1
                    return versions.made
                }
                changed = (servers, version)
            }
            return result
        }
        if let changed {
            versions.withLock { versions in
                guard changed.version > versions.told else { return }
                versions.told = changed.version
                listeners.send(changed.servers)
            }
        }
        return result
    }

    /// The server with this key.
    public func server(_ key: String) -> ServerRecord? { all.first { $0.key == key } }

    /// The server whose handle is `localID` (``ServerRecord/localID``), whatever its key now.
    public func server(_ localID: UUID) -> ServerRecord? { all.first { $0.localID == localID } }

    /// The command line's lookup of what a person typed: a server by its handle, instance id,
    /// label (in any case), primary URL, or unique id prefix. Not the library's: its calls take a
    /// ``ServerReference``.
    package func find(_ text: String) throws -> ServerRecord {
        let all = self.all
        if let exact = all.first(where: { $0.key == text || $0.primary.url == text }) { return exact }
        if let handle = UUID(uuidString: text), let held = all.first(where: { $0.localID == handle }) { return held }
        if let labelled = all.first(where: { $0.label.map { Self.sameLabel($0, text) } ?? false }) {
            return labelled
        }
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
        try changeFile { servers in
            let key = previousKey ?? record.key
            var record = record
            // The server's handle stays: a record saved over one of the same server keeps its id.
            if let kept = servers.first(where: { $0.key == key }) ?? servers.first(where: { $0.key == record.key }) {
                record.keepHandle(of: kept)
            }
            servers.removeAll { $0.key == key || $0.key == record.key }
            try Self.refuseHandleClash(record, among: servers)
            servers.append(record)
        }
    }

    /// Throws when `record`'s key reads as the handle of one of `others`, or its handle as the
    /// key of one: a string that names a server (``ServerReference``, the command line's
    /// ``find(_:)``) would then name two. A server chooses its own id, and the handle of a record
    /// written before handles were kept is derived from its key, which anyone may know: a server
    /// that took such a handle for its id would have the other's commands, tokens and
    /// passwords sent its way.
    static func refuseHandleClash(_ record: ServerRecord, among others: [ServerRecord]) throws {
        let keyAsHandle = UUID(uuidString: record.key)
        guard
            let other = others.first(where: {
                $0.localID == keyAsHandle || UUID(uuidString: $0.key) == record.localID
            })
        else { return }
        throw ClientError.badAnswer(
            address: record.primary.url,
            detail: "its id is the handle of another enrolled server on this device (\(other.primary.url)), "
                + "or its handle that one's id; remove one of the two")
    }

    /// Saves `record` unless a record of the same server is stored already (its key, or its
    /// primary address): then that one is returned and nothing changes. One step under the file's
    /// lock, so a sign-in saved meanwhile is never replaced by a record without its session.
    func insertIfAbsent(_ record: ServerRecord) throws -> ServerRecord {
        try changeFile { servers in
            if let stored = servers.first(where: { $0.key == record.key || $0.primary.url == record.primary.url }) {
                return stored
            }
            try Self.refuseHandleClash(record, among: servers)
            servers.append(record)
            return record
        }
    }

    /// Reads, changes and saves the record stored under `key` in one step, so that a change made
    /// meanwhile (an address removed, the server removed) is never undone by a stale copy.
    /// Returns the saved record, or `nil` when there is no such record any more.
    @discardableResult
    public func update(_ key: String, _ change: (inout ServerRecord) -> Void) throws -> ServerRecord? {
        try rewrite(key) { record, _ in change(&record) }
    }

    /// ``update(_:_:)`` for a change that may give the record another key (a new instance id)
    /// and may refuse: `change` sees the other records as stored now, and whatever it throws
    /// leaves the file as it was. A record left with the key of another is refused.
    @discardableResult
    func rewrite(_ key: String, _ change: (inout ServerRecord, _ others: [ServerRecord]) throws -> Void) throws
        -> ServerRecord?
    {
        try changeFile { servers in
            guard let index = servers.firstIndex(where: { $0.key == key }) else { return nil }
            var record = servers[index]
            let others = servers.enumerated().filter { $0.offset != index }.map(\.element)
            try change(&record, others)
            if let other = others.first(where: { $0.key == record.key }) {
                throw ClientError.badAnswer(
                    address: record.primary.url,
                    detail: "it would be kept as \(record.key), the key of another enrolled server "
                        + "(\(other.primary.url)); remove one of the two")
            }
            try Self.refuseHandleClash(record, among: others)
            servers[index] = record
            return record
        }
    }

    /// Gives the server `key` the label `label` (`nil` or empty: none). A label is at most 64
    /// characters of text a terminal shows as it is (no controls, no bidirectional overrides), and
    /// names one server: another server's label, key or primary URL is refused.
    @discardableResult
    public func setLabel(_ label: String?, of key: String) throws -> ServerRecord {
        let label = label?.trimmingCharacters(in: .whitespaces)
        if let label, !label.isEmpty {
            guard label.count <= 64 else { throw ClientError.invalidInput("a label is at most 64 characters") }
            guard ServerText.clean(label) == label,
                !label.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
            else {
                throw ClientError.invalidInput("a label cannot hold control or bidirectional formatting characters")
            }
        }
        let saved = try rewrite(key) { record, others in
            if let label, !label.isEmpty,
                let other = others.first(where: {
                    $0.label.map { Self.sameLabel($0, label) } ?? false || $0.key == label || $0.primary.url == label
                })
            {
                throw ClientError.invalidInput("\(other.displayName) is named \(label) already")
            }
            record.label = label?.isEmpty == false ? label : nil
        }
        guard let saved else { throw ClientError.unknownServer(key) }
        return saved
    }

    private static func sameLabel(_ a: String, _ b: String) -> Bool {
        a.compare(b, options: [.caseInsensitive]) == .orderedSame
    }

    /// Removes a server's record, then saves.
    public func remove(_ key: String) throws {
        try changeFile { servers in servers.removeAll { $0.key == key } }
    }
}

import HomeportStorage

/// A server enrolled with the push gateway.
struct GatewayServer: Sendable, Hashable {
    /// Its row id.
    var id: Int64
    /// The name the gateway's operator gave it.
    var name: String
    /// The installation id its pushes must carry as `s`.
    var instanceID: String
    /// The address it was enrolled from (where it published its credential's digest).
    var url: String = ""
    /// When it was enrolled, in Unix seconds.
    var createdAt: Int64
    /// When it was revoked; `nil` while it may push.
    var revokedAt: Int64?
    /// Pushes Apple accepted.
    var delivered: Int64 = 0
    /// Pushes the gateway or Apple refused.
    var refused: Int64 = 0
    /// Pushes Apple did not answer (tried again by the server).
    var failed: Int64 = 0
    /// Its last push, in Unix seconds.
    var lastPushAt: Int64?
    /// The mark of its devices, drawn anew by each change of them (``GatewayDeviceCache``).
    var devicesVersion: Int64 = 0
}

/// The `gateway_servers` table: enrolled servers, their credentials' SHA-256, their rate window
/// and their counters.
struct GatewayServerStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    private static let columns =
        "id, name, instance_id, url, created_at, revoked_at, delivered, refused, failed, last_push_at, devices_version"

    /// What enrolling came to.
    enum Enrollment {
        /// Enrolled.
        case added(GatewayServer)
        /// Another server has the name (revoked ones keep theirs).
        case nameTaken
        /// The installation is enrolled already, and not revoked.
        case instanceTaken(GatewayServer)
        /// The credential is another server's.
        case credentialTaken
    }

    /// Enrolls a server, unless its name, its installation (while enrolled) or its credential is
    /// taken. Call it in a transaction.
    func add(name: String, instanceID: String, url: String, credentialHash: String, now: Int64) throws -> Enrollment {
        if let live = try db.execute(
            "SELECT \(Self.columns) FROM gateway_servers WHERE instance_id = $1 AND revoked_at IS NULL",
            [.text(instanceID)]
        ).first.flatMap(Self.server) {
            return .instanceTaken(live)
        }
        guard try db.execute("SELECT id FROM gateway_servers WHERE name = $1", [.text(name)]).isEmpty else {
            return .nameTaken
        }
        guard
            try db.execute("SELECT id FROM gateway_servers WHERE credential_hash = $1", [.text(credentialHash)])
                .isEmpty
        else { return .credentialTaken }
        // Two enrolments at once: the unique indexes refuse the second, which throws.
        guard
            let added = try db.execute(
                """
                INSERT INTO gateway_servers (name, instance_id, url, credential_hash, created_at)
                VALUES ($1, $2, $3, $4, $5) RETURNING \(Self.columns)
                """, [.text(name), .text(instanceID), .text(url), .text(credentialHash), .integer(now)]
            ).first.flatMap(Self.server)
        else { return .nameTaken }
        return .added(added)
    }

    /// The working server whose credential's digest is `credentialHash`, if any.
    func live(credentialHash: String) throws -> GatewayServer? {
        try db.execute(
            "SELECT \(Self.columns) FROM gateway_servers WHERE credential_hash = $1 AND revoked_at IS NULL",
            [.text(credentialHash)]
        ).first.flatMap(Self.server)
    }

    /// The credential digests of every server that may push.
    func liveCredentialHashes() throws -> Set<String> {
        Set(
            try db.execute("SELECT credential_hash FROM gateway_servers WHERE revoked_at IS NULL")
                .compactMap { $0.string("credential_hash") })
    }

    /// Every server, oldest first.
    func all() throws -> [GatewayServer] {
        try db.execute("SELECT \(Self.columns) FROM gateway_servers ORDER BY id").compactMap(Self.server)
    }

    /// Revokes the server named `name` and forgets its devices; false when none may push. Call
    /// it in a transaction: the server's row is taken first, as a change of its devices takes it.
    func revoke(name: String, now: Int64) throws -> Bool {
        guard
            let id = try db.execute(
                "UPDATE gateway_servers SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL RETURNING id",
                [.text(name), .integer(now)]
            ).first?.int("id")
        else { return false }
        try db.execute("DELETE FROM gateway_devices WHERE server_id = $1", [.integer(id)])
        return true
    }

    /// The working server whose credential's digest is `credentialHash`, charged `count` pushes
    /// against `perMinute` in one statement (every replica shares the window): the server and
    /// how many of the `count` fit, or `nil` for no such server.
    func authenticate(credentialHash: String, charging count: Int, perMinute: Int, now: Int64) throws -> (
        server: GatewayServer, allowed: Int
    )? {
        guard
            let row = try db.execute(
                """
                UPDATE gateway_servers SET
                    window_pushes = CASE WHEN window_start <= $3 - 60 THEN $2 ELSE window_pushes + $2 END,
                    window_start = CASE WHEN window_start <= $3 - 60 THEN $3 ELSE window_start END
                WHERE credential_hash = $1 AND revoked_at IS NULL
                RETURNING \(Self.columns), window_pushes
                """, [.text(credentialHash), .integer(Int64(count)), .integer(now)]
            ).first, let server = Self.server(row), let charged = row.int("window_pushes")
        else { return nil }
        let before = Int(charged) - count
        return (server, max(0, min(count, perMinute - before)))
    }

    /// Adds a batch's outcomes to the server's counters.
    func count(server id: Int64, delivered: Int, refused: Int, failed: Int, now: Int64) throws {
        try db.execute(
            """
            UPDATE gateway_servers SET delivered = delivered + $2, refused = refused + $3, failed = failed + $4,
                last_push_at = $5 WHERE id = $1
            """,
            [
                .integer(id), .integer(Int64(delivered)), .integer(Int64(refused)), .integer(Int64(failed)),
                .integer(now),
            ]
        )
    }

    private static func server(_ row: Row) -> GatewayServer? {
        guard let id = row.int("id"), let name = row.string("name"), let instance = row.string("instance_id"),
            let created = row.int("created_at")
        else { return nil }
        return GatewayServer(
            id: id, name: name, instanceID: instance, url: row.string("url") ?? "", createdAt: created,
            revokedAt: row.int("revoked_at"),
            delivered: row.int("delivered") ?? 0, refused: row.int("refused") ?? 0, failed: row.int("failed") ?? 0,
            lastPushAt: row.int("last_push_at"), devicesVersion: row.int("devices_version") ?? 0)
    }
}

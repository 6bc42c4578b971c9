import HomeportStorage

/// The `provider_flows` table: a sign-in sent to a provider's own pages, until the browser comes
/// back with its state (once: reading it deletes it).
struct ProviderFlowStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// A flow under way.
    struct Flow: Sendable, Hashable {
        /// The hash of the cookie value that binds it to the browser that began it.
        var bindingHash: String
        var providerID: String
        var nonce: String
        var verifier: String
        /// The account a signed-in person connects the provider to; `nil` for a sign-in.
        var connectUserID: Int64?
        var expiresAt: Int64
    }

    func insert(stateHash: String, _ flow: Flow, now: Int64) throws {
        try db.execute("DELETE FROM provider_flows WHERE expires_at < $1", [.integer(now)])
        try db.execute(
            """
            INSERT INTO provider_flows (state_hash, binding_hash, provider_id, nonce, verifier, connect_user_id,
                expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            [
                .text(stateHash), .text(flow.bindingHash), .text(flow.providerID), .text(flow.nonce),
                .text(flow.verifier), flow.connectUserID.map(SQLValue.integer) ?? .null, .integer(flow.expiresAt),
            ])
    }

    /// The flow with this state, deleted as it is read (a way back works once); `nil` when there
    /// is none or it expired.
    func claim(stateHash: String, now: Int64) throws -> Flow? {
        guard
            let row = try db.execute(
                """
                DELETE FROM provider_flows WHERE state_hash = $1
                RETURNING binding_hash, provider_id, nonce, verifier, connect_user_id, expires_at
                """, [.text(stateHash)]
            ).first, let binding = row.string("binding_hash"), let provider = row.string("provider_id"),
            let nonce = row.string("nonce"), let verifier = row.string("verifier"),
            let expires = row.int("expires_at"), expires > now
        else { return nil }
        return Flow(
            bindingHash: binding, providerID: provider, nonce: nonce, verifier: verifier,
            connectUserID: row.int("connect_user_id"), expiresAt: expires)
    }
}

import Foundation
import HomeportWire

extension HomeportClient {
    /// Enrolls (or re-enrolls) the server reached at `address` with a session token it just issued.
    ///
    /// - The installation id comes from the app-info the new session reads there. A 404 is a server
    ///   without app-info (an older or a plain allauth server): it stays single-address. Any other
    ///   answer that is not app-info refuses the sign-in (nothing is enrolled).
    /// - An address that is not the primary of an enrolled server but reports the id of one claims
    ///   that server. The claim is confirmed before anything changes: an address that answers the
    ///   probe as that installation (its primary or a verified alternative) must accept the new
    ///   session too (one session table, one installation). Otherwise it is refused.
    /// - A live session this device held for the server is ended on the server (and the app is
    ///   told how that went) before the new one replaces it.
    /// - The installation key the sign-in address proves for that id is pinned (trust on first
    ///   use, as SSH's first connection: the person chose this address and sent it their
    ///   password); from then on every address must prove it. At an address paired with a
    ///   pairing link (``pair(_:allowHTTP:)``), only the paired installation and key are enrolled.
    func enroll(_ address: ServerAddress, email: String, token: String) async throws -> ServerRecord {
        let info = try await signInAppInfo(at: address, token: token)
        let publicKey = await provenKey(at: address, info: info)
        try checkPairing(at: address, instanceID: info?.instanceId, publicKey: publicKey)
        let atPrimary = directory.all.first { $0.primary.url == address.url }
        let claimed = info?.instanceId.flatMap { id in directory.all.first { $0.instanceID == id } }
        var confirmation: Choice?
        if atPrimary == nil, let claimed {
            confirmation = try await confirmClaim(of: claimed, by: address, token: token)
        }
        guard let existing = (atPrimary ?? claimed).flatMap({ directory.server($0.key) }) else {
            return try enrollNew(address, email: email, token: token, info: info, publicKey: publicKey)
        }
        try Self.keepPin(of: existing, info: info, proven: publicKey, at: address)

        // Refused before anything changes (the old session is not ended for an id that is another
        // server's); checked again on the record as stored when it is saved.
        if let id = info?.instanceId, let other = directory.server(id.description), other.key != existing.key {
            throw Self.anotherServersID(id, at: address, other: other)
        }
        let replaced = await replaceSession(of: existing, with: token)
        // The change is made to the record as it is stored now, not to the copy read before the
        // sign-in: an address removed meanwhile in another terminal stays removed.
        let primaryConfirmed = confirmation?.address.url
        let path = networkPath
        var event: ClientEvent?
        // The token is stored in the same change, under the directory's lock: a process that
        // signs the account out on the old token's refusal meanwhile either comes first (and this
        // change then signs it in) or finds the new token and leaves it.
        let saved = try directory.rewrite(existing.key) { record, others in
            // A key pinned meanwhile (by another process) is held to the same rule.
            try Self.keepPin(of: record, info: info, proven: publicKey, at: address)
            event = try info?.instanceId.flatMap { try Self.reidentify(&record, as: $0, among: others) }
            Self.signIn(&record, at: address, email: email, info: info, primaryConfirmed: primaryConfirmed, path: path)
            record.publicKey = publicKey
            try vault.store(token: token, for: record.key)
        }
        let record: ServerRecord
        if let saved {
            record = saved
        } else {
            // Removed meanwhile: enrolled afresh.
            var fresh = ServerRecord(
                instanceID: info?.instanceId ?? existing.instanceID, product: info?.product ?? existing.product,
                email: email, primary: address, alternatives: [], lastWinner: address.url, signedOut: false,
                signedInPath: path, protocolVersion: info?.protocolVersion ?? existing.protocolVersion)
            fresh.publicKey = publicKey
            record = fresh
            try vault.store(token: token, for: record.key)
            try directory.save(record)
        }
        if existing.key != record.key {
            try vault.remove(server: existing.key)
            try moveNotificationState(from: existing.key, to: record.key)
        }
        forgetWinner(existing.key)
        forgetWinner(record.key)
        if let event { onEvent(event) }
        if let replaced { onEvent(.sessionReplaced(server: record.key, email: existing.email, outcome: replaced)) }
        return record
    }

    /// What a sign-in at `address` changes in the record: the sign-in address becomes the primary;
    /// a former primary stays as an alternative, verified on `path` if it just answered as the
    /// installation (`primaryConfirmed`).
    private static func signIn(
        _ record: inout ServerRecord, at address: ServerAddress, email: String, info: AppInfo?,
        primaryConfirmed: String?, path: String
    ) {
        record.product = info?.product ?? record.product
        record.protocolVersion = info?.protocolVersion ?? record.protocolVersion
        record.email = email
        if record.primary.url != address.url,
            !record.alternatives.contains(where: { $0.address.url == record.primary.url })
        {
            let matched = primaryConfirmed == record.primary.url
            record.alternatives.append(.init(address: record.primary, verifiedPaths: matched ? [path: Date()] : [:]))
        }
        record.alternatives.removeAll { $0.address.url == address.url }
        record.primary = address
        record.signedOut = false
        record.signedInPath = path
        record.lastWinner = address.url
    }

    /// Refuses the sign-in when `record`'s installation, signed in again, did not prove the key
    /// pinned for it: an address that answers its id without that key (none, or another) does not
    /// replace the pin (no downgrade), and nor does one that says no id at all (no app-info, or
    /// none in it). A new id is an identity reset, adopted as the identity change it is.
    private static func keepPin(
        of record: ServerRecord, info: AppInfo?, proven: String?, at address: ServerAddress
    ) throws {
        guard let pinned = record.publicKey, info?.instanceId == nil || info?.instanceId == record.instanceID,
            proven != pinned
        else { return }
        throw ClientError.badAnswer(
            address: address.url,
            detail: "it answered as \(record.instanceID.map { "\($0)" } ?? "the enrolled server") without the proof "
                + "of the key pinned for it, so the sign-in was not kept and the server's record is unchanged")
    }

    /// A server this device has no record of.
    private func enrollNew(
        _ address: ServerAddress, email: String, token: String, info: AppInfo?, publicKey: String?
    ) throws -> ServerRecord {
        var record = ServerRecord(
            instanceID: info?.instanceId, product: info?.product, email: email, primary: address, alternatives: [],
            lastWinner: address.url, signedOut: false, signedInPath: networkPath, protocolVersion: info?.protocolVersion
        )
        record.publicKey = publicKey
        try vault.store(token: token, for: record.key)
        try directory.save(record)
        forgetWinner(record.key)
        return record
    }

    /// The installation key `address` proves for the id its app-info reported, probed without
    /// a credential; `nil` when it proves none (a server without a key, or no id to prove).
    private func provenKey(at address: ServerAddress, info: AppInfo?) async -> String? {
        guard let info, let id = info.instanceId else { return nil }
        let expected = ServerIdentity(product: info.product, protocolVersion: info.protocolVersion, instanceId: id)
        guard case .match(let identity) = await probe.probe(address, expected: expected) else { return nil }
        return identity.publicKey
    }

    /// App-info read with the new session at the sign-in address: `nil` for a server without it
    /// (404); an error for any other answer that is not app-info.
    private func signInAppInfo(at address: ServerAddress, token: String) async throws -> AppInfo? {
        guard let url = address.url(HomeportPath.appInfo) else { throw ClientError.invalidAddress(address.url) }
        let response = try await transport.send(
            try credentialed(
                ClientRequest(
                    url: url, headers: ["Accept": "application/json"], byteLimit: configuration.byteLimit,
                    deadline: configuration.requestDeadline),
                token: token, for: .issuer(address)))
        if response.status == 404 { return nil }
        if response.isHTML { throw ClientError.notAnAPI(address: address.url, answer: response.kind) }
        guard response.status == 200, let info = try? JSONDecoder().decode(AppInfo.self, from: response.body) else {
            throw ClientError.badAnswer(
                address: address.url, detail: "app-info answered \(response.kind), so the server was not enrolled")
        }
        return Self.cleaned(info)
    }

    /// Confirms that `address`, which reports the id of the enrolled `server`, is that
    /// installation: an address that answers the probe as `server` (never the primary's standing
    /// trust alone) must accept the session `address` just issued. Returns that address.
    private func confirmClaim(of server: ServerRecord, by address: ServerAddress, token: String) async throws -> Choice
    {
        let choice: Choice
        do {
            choice = try await choose(for: server, matchOnly: true)
        } catch {
            throw ClientError.claimNotConfirmed(
                address: address.url, server: server.key,
                detail: "none of its addresses answered as it on this network")
        }
        guard let url = choice.address.url(HomeportPath.appInfo) else {
            throw ClientError.invalidAddress(choice.address.url)
        }
        let response = try? await transport.send(
            try credentialed(
                ClientRequest(
                    url: url, headers: ["Accept": "application/json"], byteLimit: configuration.byteLimit,
                    deadline: configuration.requestDeadline),
                token: token, for: .chosen(choice, alternativeMatched: false)))
        guard let response, response.status == 200, !response.isHTML,
            let info = try? JSONDecoder().decode(AppInfo.self, from: response.body),
            info.instanceId == server.instanceID
        else {
            throw ClientError.claimNotConfirmed(
                address: address.url, server: server.key,
                detail: "\(choice.address.url) does not know the session \(address.url) opened"
                    + (response.map { " (it answered \($0.kind))" } ?? " (no answer)"))
        }
        return choice
    }

    /// Ends, on the server, the live session this device held for `record` before a new sign-in
    /// replaces it, through an address that answers the probe, now, as the installation that
    /// session belongs to — never the sign-in address on its word alone: it may now be another
    /// installation. `nil` when there was no live session to end.
    private func replaceSession(of record: ServerRecord, with token: String) async -> SignOutOutcome? {
        guard !record.signedOut else { return nil }
        let old: String?
        do {
            old = try vault.token(for: record.key)
        } catch {
            return .notConfirmed("the stored credential could not be read (\(error)), so it could not be ended")
        }
        guard let old, old != token else { return nil }
        return await endSession(old, of: record)
    }
}

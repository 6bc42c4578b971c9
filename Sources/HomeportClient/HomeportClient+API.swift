import Foundation
import HomeportWire

extension HomeportClient {
    /// An answer of an authenticated request, and the address it came through.
    public struct Answer: Sendable {
        /// The response.
        public var response: ClientResponse
        /// The address that answered.
        public var via: ServerAddress
    }

    /// Sends an authenticated request to `server`'s API through the address chosen on the current
    /// path. A `GET` that fails in transport is tried once more on another address; a write is
    /// never resent (nor queued for later).
    public func send(
        _ method: String = "GET", _ path: String, to server: String, json: Data? = nil
    ) async throws -> Answer {
        var record = try directory.find(server)
        guard !record.signedOut, let token = try vault.token(for: record.key) else {
            throw ClientError.signedOut(server: record.key)
        }
        var failed: Set<String> = []
        var csrfRetried = false
        while true {
            let address = try await chooseAddress(for: record, excluding: failed)
            do {
                let answer = try await exchange(method, path, json: json, token: token, at: address, record: record)
                if answer.response.status == 403, !csrfRetried,
                    Self.errorCodes(answer.response).contains(AuthErrorCode.csrfInvalid)
                {
                    // The one refusal that allows a retry: a server-declared CSRF failure.
                    csrfRetried = true
                    forgetWinner(record.key)
                    continue
                }
                return answer
            } catch ClientError.unreachable(let origin, let reason) where method == "GET" && failed.isEmpty {
                failed.insert(address.url)
                forgetWinner(record.key)
                record = directory.server(record.key) ?? record
                _ = (origin, reason)
            }
        }
    }

    /// One exchange with an address: the token is attached here and only here; same-origin
    /// redirects are followed with it, any other redirect is refused with nothing sent.
    private func exchange(
        _ method: String, _ path: String, json: Data?, token: String, at address: ServerAddress, record: ServerRecord
    ) async throws -> Answer {
        guard var url = address.url(path) else { throw ClientError.invalidAddress(address.url + path) }
        for _ in 0...3 {
            var headers = [HomeportHeader.sessionToken: token, "Accept": "application/json"]
            if json != nil { headers["Content-Type"] = "application/json" }
            let response = try await transport.send(
                ClientRequest(
                    method: method, url: url, headers: headers, body: json, byteLimit: configuration.byteLimit,
                    deadline: configuration.requestDeadline))
            if (300..<400).contains(response.status) {
                // A write is never sent twice: only a read follows a redirect.
                guard method == "GET" || method == "HEAD" else {
                    throw ClientError.badAnswer(
                        address: address.url, detail: "the server redirected a \(method); it was not sent again")
                }
                guard let location = response.headers["location"],
                    let next = URL(string: location, relativeTo: url)?.absoluteURL
                else { throw ClientError.badAnswer(address: address.url, detail: "a redirect without a location") }
                guard ServerAddress.origin(of: next) == address.origin else {
                    throw ClientError.offHostRedirect(
                        address: address.url, target: ServerAddress.origin(of: next) ?? location)
                }
                url = next
                continue
            }
            if response.isHTML { throw ClientError.notAnAPI(address: address.url) }
            if response.status == 401 || response.status == 410 {
                try markSignedOut(record.key)
                throw ClientError.signedOut(server: record.key)
            }
            try adoptRotatedToken(response, server: record.key)
            return Answer(response: response, via: address)
        }
        throw ClientError.badAnswer(address: address.url, detail: "too many redirects")
    }

    /// `GET /api/v1/app-info`. When it reports another `instanceId` than the enrolled one, the
    /// client adopts it, marks every alternative unverified and emits ``ClientEvent/identityChanged(server:old:new:unverifiedAlternatives:)``.
    public func appInfo(_ server: String) async throws -> (info: AppInfo, via: ServerAddress) {
        let answer = try await send("GET", HomeportPath.appInfo, to: server)
        guard answer.response.status == 200,
            let info = try? JSONDecoder().decode(AppInfo.self, from: answer.response.body)
        else {
            throw ClientError.badAnswer(address: answer.via.url, detail: "app-info answered \(answer.response.status)")
        }
        let record = try directory.find(server)
        if let new = info.instanceId, new != record.instanceID {
            try adoptIdentity(new, in: record)
        }
        return (info, answer.via)
    }

    /// Adopts the id app-info reports: the record moves to the new key and the credential follows.
    /// When it replaces another id, alternatives lose their verifications and the app is told;
    /// when the server had none yet (app-info could not say before), it is simply learned.
    func adoptIdentity(_ new: InstanceID, in record: ServerRecord) throws {
        var updated = record
        let event = try reidentify(&updated, as: new, previousKey: record.key)
        if let token = try vault.token(for: record.key) {
            try vault.store(token: token, for: updated.key)
            try vault.remove(server: record.key)
        }
        try directory.save(updated, replacing: record.key)
        forgetWinner(record.key)
        if let event { onEvent(event) }
    }

    /// Gives `record` the id `new`, refusing an id another enrolled server already has. A changed id
    /// (not a first one) unverifies every alternative and yields the event to emit once saved.
    func reidentify(_ record: inout ServerRecord, as new: InstanceID, previousKey: String?) throws -> ClientEvent? {
        if let other = directory.server(new.description), other.key != previousKey {
            throw ClientError.badAnswer(
                address: record.primary.url,
                detail: "it answers as \(new), which is the id of another enrolled server (\(other.primary.url)); "
                    + "remove one of the two")
        }
        guard let old = record.instanceID, old != new else {
            record.instanceID = new
            return nil
        }
        record.instanceID = new
        record.lastWinner = record.primary.url
        for index in record.alternatives.indices { record.alternatives[index].verifiedPaths = [:] }
        return .identityChanged(
            server: new.description, old: old, new: new, unverifiedAlternatives: record.alternatives.map(\.address.url))
    }

    /// Stores `meta.session_token` when an answer carries one (it replaces the old token).
    func adoptRotatedToken(_ response: ClientResponse, server: String) throws {
        guard let envelope = try? JSONDecoder().decode(AuthEnvelope.self, from: response.body),
            let token = envelope.meta?.sessionToken
        else { return }
        try vault.store(token: token, for: server)
    }

    func markSignedOut(_ key: String) throws {
        try vault.remove(server: key)
        try directory.update(key) { $0.signedOut = true }
        forgetWinner(key)
        onEvent(.signedOut(server: key))
    }

    static func errorCodes(_ response: ClientResponse) -> [String] {
        (try? JSONDecoder().decode(AuthEnvelope.self, from: response.body))?.errors?.map(\.code) ?? []
    }
}

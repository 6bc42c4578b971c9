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
    ///
    /// Only the API's own refusal of the token (see ``ClientResponse/isHTML`` and the sign-out rule
    /// in docs/client.md), from an address that answered as the enrolled installation, signs the
    /// account out; any other 401 or 410 leaves the session in place and throws
    /// ``ClientError/sessionKept(address:detail:)``.
    ///
    /// `headers` may add conditional and language fields only (``extraHeaderNames``:
    /// `If-None-Match`, say); any other throws ``ClientError/invalidInput(_:)`` with nothing sent,
    /// so that no cookie, credential or `Host` is ever added to what the client sends.
    public func send(
        _ method: String = "GET", _ path: String, to server: some ServerReference, json: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> Answer {
        try await exchange(method, path, to: server, json: json, headers: headers).answer
    }

    /// ``send(_:_:to:json:headers:)``, with the answer read as `type`: a 2xx answer in JSON is
    /// decoded with `decoder`, and anything else throws — the server's refusal, with its code,
    /// message and field (``ClientError/refused(address:status:code:message:field:)``),
    /// ``ClientError/notAnAPI(address:answer:)`` for an HTML page (from something in between,
    /// say), or ``ClientError/badAnswer(address:detail:)`` for another answer that is not JSON or
    /// not that type. Text the server wrote into the value is as it sent it.
    public func send<Value: Decodable>(
        _ method: String = "GET", _ path: String, to server: some ServerReference, json: Data? = nil,
        headers: [String: String] = [:], as type: Value.Type, decoder: JSONDecoder = JSONDecoder()
    ) async throws -> Value {
        let answer = try await send(method, path, to: server, json: json, headers: headers)
        guard (200...299).contains(answer.response.status) else { throw Self.refusal(answer) }
        guard answer.response.isJSON else {
            throw ClientError.badAnswer(
                address: answer.via.url, detail: "\(path) answered \(answer.response.kind), not JSON")
        }
        do {
            return try decoder.decode(Value.self, from: answer.response.body)
        } catch {
            throw ClientError.badAnswer(
                address: answer.via.url, detail: "\(path) answered JSON that is not \(Value.self): \(error)")
        }
    }

    /// ``send(_:_:to:json:headers:)``, also saying how the answering address was chosen.
    func exchange(
        _ method: String, _ path: String, to server: some ServerReference, json: Data? = nil,
        headers: [String: String] = [:]
    ) async throws
        -> (answer: Answer, choice: Choice)
    {
        guard path.hasPrefix("/"),
            !path.contains(where: { $0.isWhitespace || $0 == "#" || $0.asciiValue.map { $0 < 0x20 } == true })
        else {
            throw ClientError.invalidInput(
                "an API path starts with / and has no spaces, '#' or control characters: '\(ServerText.clean(path, limit: 80))'"
            )
        }
        var record = try server.record(in: directory)
        if let refused = headers.keys.first(where: { !Self.extraHeaderNames.contains($0.lowercased()) }) {
            throw ClientError.invalidInput(
                "the header \(ServerText.clean(refused, limit: 80)) cannot be added to an API request; only "
                    + Self.extraHeaderNames.sorted().joined(separator: ", "))
        }
        var outgoing = OutgoingRequest(method: method, path: path, server: record.key, headers: headers)
        configuration.requestHook?(&outgoing)
        // The hook adds the language, and changes nothing the caller set: a condition the caller
        // reads the answer by (a catalogue's If-None-Match) stays the caller's.
        let added = Set(outgoing.headers.keys).subtracting(headers.keys)
        if let refused = added.first(where: { $0.lowercased() != "accept-language" })
            ?? headers.keys.first(where: { outgoing.headers[$0] != headers[$0] })
        {
            throw ClientError.invalidInput(
                "the request hook cannot set \(ServerText.clean(refused, limit: 80)); it may add Accept-Language only")
        }
        let headers = outgoing.headers
        // A value is one line of text: a line break would add a field (a Host) of its own.
        if let broken = headers.first(where: {
            $0.value.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
        }) {
            throw ClientError.invalidInput(
                "the header \(ServerText.clean(broken.key, limit: 80)) has a line break or a control character in its value"
            )
        }
        guard !record.signedOut, let token = try vault.token(for: record.key) else {
            throw ClientError.signedOut(server: record.key)
        }
        var failed: Set<String> = []
        var firstFailure: ClientError?
        var csrfRetried = false
        // Once an alternative has answered as the installation, the primary's standing trust is
        // out of this command, its retries included.
        var alternativeMatched = false
        while true {
            let choice: Choice
            do {
                choice = try await choose(for: record, excluding: failed, matchOnly: alternativeMatched)
                if case .matched = choice.grounds, choice.address.url != record.primary.url {
                    alternativeMatched = true
                }
            } catch let error as ClientError {
                // The request already went to an address that did not answer: say that, not
                // that nothing was sent.
                throw firstFailure ?? error
            }
            do {
                let answer = try await sendOnce(
                    method, path, json: json, headers: headers, token: token, at: choice,
                    alternativeMatched: alternativeMatched, record: record)
                if answer.response.status == 403, !csrfRetried,
                    Self.errorCodes(answer.response).contains(AuthErrorCode.csrfInvalid)
                {
                    // The one refusal that allows a retry: a server-declared CSRF failure.
                    csrfRetried = true
                    forgetWinner(record.key)
                    continue
                }
                return (answer, choice)
            } catch let error as ClientError where method == "GET" && failed.isEmpty && error.isUnreachable {
                failed.insert(choice.address.url)
                firstFailure = error
                forgetWinner(record.key)
                record = directory.server(record.key) ?? record
            }
        }
    }

    /// One exchange with an address: the token is attached by ``credentialed(_:token:for:)``;
    /// same-origin redirects are followed with it, any other redirect is refused with nothing sent.
    private func sendOnce(
        _ method: String, _ path: String, json: Data?, headers extra: [String: String], token: String,
        at choice: Choice, alternativeMatched: Bool, record: ServerRecord
    ) async throws -> Answer {
        let address = choice.address
        guard var url = address.url(path) else { throw ClientError.invalidAddress(address.url + path) }
        for _ in 0...3 {
            var headers = extra
            headers["Accept"] = "application/json"
            if json != nil { headers["Content-Type"] = "application/json" }
            let response = try await transport.send(
                try credentialed(
                    ClientRequest(
                        method: method, url: url, headers: headers, body: json, byteLimit: configuration.byteLimit,
                        deadline: configuration.requestDeadline),
                    token: token, for: .chosen(choice, alternativeMatched: alternativeMatched)))
            if Self.isRedirect(response.status) {
                // A write is never sent twice: only a read follows a redirect.
                guard method == "GET" || method == "HEAD" else {
                    throw ClientError.badAnswer(
                        address: address.url, detail: "the server redirected a \(method); it was not sent again")
                }
                url = try Self.sameOriginTarget(of: response, from: url, at: address)
                continue
            }
            try judge(response, path: path, choice: choice, record: record, token: token)
            return Answer(response: response, via: address)
        }
        throw ClientError.badAnswer(address: address.url, detail: "too many redirects")
    }

    /// The header fields a caller may add to an API request (lowercased): conditions and language.
    public static let extraHeaderNames: Set<String> = [
        "if-none-match", "if-match", "if-modified-since", "if-unmodified-since", "accept-language",
    ]

    /// Whether `status` is a redirect the client may follow (304 Not Modified is not one).
    static func isRedirect(_ status: Int) -> Bool {
        [301, 302, 303, 307, 308].contains(status)
    }

    /// Where a redirect of a read goes, when it stays on the address's origin; otherwise nothing
    /// is sent there and this throws.
    static func sameOriginTarget(of response: ClientResponse, from url: URL, at address: ServerAddress) throws -> URL {
        guard let location = response.headers["location"],
            let next = URL(string: location, relativeTo: url)?.absoluteURL
        else { throw ClientError.badAnswer(address: address.url, detail: "a redirect without a location") }
        guard ServerAddress.origin(of: next) == address.origin else {
            throw ClientError.offHostRedirect(
                address: address.url, target: ServerAddress.origin(of: next) ?? ServerText.clean(location))
        }
        return next
    }

    /// What every authenticated answer must pass: a 401 or 410 signs the account out only when it
    /// is the API's own refusal from an address that speaks for the installation (otherwise it
    /// throws ``ClientError/sessionKept(address:detail:)``); a web page is never the API.
    func judge(_ response: ClientResponse, path: String, choice: Choice, record: ServerRecord, token: String) throws {
        if response.status == 401 || response.status == 410 {
            try signOutIfRefused(response, path: path, choice: choice, record: record, token: token)
        }
        if response.isHTML { throw ClientError.notAnAPI(address: choice.address.url, answer: response.kind) }
    }

    /// A 401 or 410: the account is signed out only when it is the API's own refusal of the token
    /// from an address that speaks for the enrolled installation. Any other refusal (a proxy's, an
    /// HTML page, another installation's) leaves the session as it is.
    private func signOutIfRefused(
        _ response: ClientResponse, path: String, choice: Choice, record: ServerRecord, token: String
    ) throws {
        let onAppDoor = path.hasPrefix(AllauthAppPath.base + "/")
        guard response.refusesSession(onAppDoor: onAppDoor) else {
            // The app door's own 401 asking to reauthenticate keeps the session; the caller reads it.
            if onAppDoor && response.asksToReauthenticate { return }
            throw ClientError.sessionKept(
                address: choice.address.url,
                detail: "refused the request with \(response.kind), which is not the API's own refusal")
        }
        guard choice.speaksForServer else {
            throw ClientError.sessionKept(
                address: choice.address.url,
                detail: "refused the session, but did not answer as the enrolled installation ("
                    + (choice.standingOutcome?.description ?? "no match") + ")")
        }
        try markSignedOut(record.key, refused: token)
        throw ClientError.signedOut(server: record.key)
    }

    /// `GET /api/v1/app-info`, with the server's text cleaned of terminal controls.
    ///
    /// Only the primary's app-info can change the enrolled identity: when it reports another
    /// `instanceId`, the client adopts it, marks every alternative unverified and emits
    /// ``ClientEvent/identityChanged(server:old:new:unverifiedAlternatives:)``. An alternative that
    /// reports another id loses its verification instead, and the call throws
    /// ``ClientError/alternativeDisowned(address:seen:)``.
    public func appInfo(_ server: some ServerReference) async throws -> (info: AppInfo, via: ServerAddress) {
        let (answer, _) = try await exchange("GET", HomeportPath.appInfo, to: server)
        guard answer.response.status == 200,
            let raw = try? JSONDecoder().decode(AppInfo.self, from: answer.response.body)
        else {
            throw ClientError.badAnswer(address: answer.via.url, detail: "app-info answered \(answer.response.status)")
        }
        let info = Self.cleaned(raw)
        let record = try server.record(in: directory)
        guard answer.via.url == record.primary.url else {
            if let new = info.instanceId, new != record.instanceID {
                try disown(answer.via, of: record)
                throw ClientError.alternativeDisowned(address: answer.via.url, seen: new)
            }
            return (info, answer.via)
        }
        if let new = info.instanceId, new != record.instanceID {
            try adoptIdentity(new, in: record, product: info.product, protocolVersion: info.protocolVersion)
        } else if info.instanceId != nil,
            info.product != record.product || info.protocolVersion != record.protocolVersion
        {
            // The primary speaks for the installation: what it now calls itself is what is enrolled.
            try directory.update(record.key) { stored in
                guard stored.instanceID == record.instanceID else { return }
                stored.product = info.product
                stored.protocolVersion = info.protocolVersion
            }
            forgetWinner(record.key)
        }
        return (info, answer.via)
    }

    /// An app-info with every text a server chose cleaned of terminal controls.
    static func cleaned(_ info: AppInfo) -> AppInfo {
        AppInfo(
            product: ServerText.clean(info.product), version: ServerText.clean(info.version),
            protocolVersion: info.protocolVersion, features: info.features.map { ServerText.clean($0) },
            instanceId: info.instanceId)
    }

    /// Withdraws every verification of an alternative that answered as another installation.
    private func disown(_ address: ServerAddress, of record: ServerRecord) throws {
        try directory.update(record.key) { stored in
            for index in stored.alternatives.indices where stored.alternatives[index].address.url == address.url {
                stored.alternatives[index].verifiedPaths = [:]
            }
            if stored.lastWinner == address.url { stored.lastWinner = nil }
        }
        forgetWinner(record.key)
    }

    /// Adopts the id app-info reports: the record moves to the new key and the credential follows.
    /// When it replaces another id, alternatives lose their verifications and the app is told;
    /// when the server had none yet (app-info could not say before), it is simply learned. The
    /// change is made to the record as it is stored now.
    func adoptIdentity(_ new: InstanceID, in record: ServerRecord, product: String, protocolVersion: Int) throws {
        let newKey = new.description
        if let other = directory.server(newKey), other.key != record.key {
            throw Self.anotherServersID(new, at: record.primary, other: other)
        }
        let moving = newKey != record.key
        var event: ClientEvent?
        var adopted = false
        // One change under the directory's lock, made only while the record still is the one
        // whose primary answered (another process may have moved the primary or adopted another
        // id meanwhile): the token moves with it, before the record says so.
        try directory.rewrite(record.key) { stored, others in
            guard stored.instanceID == record.instanceID, stored.primary.url == record.primary.url else { return }
            var changed = stored
            event = try Self.reidentify(&changed, as: new, among: others)
            changed.product = product
            changed.protocolVersion = protocolVersion
            if moving, let token = try vault.token(for: record.key) { try vault.store(token: token, for: newKey) }
            stored = changed
            adopted = true
        }
        guard adopted else { return }
        if moving { try vault.remove(server: record.key) }
        try moveNotificationState(from: record.key, to: newKey)
        forgetWinner(record.key)
        if let event { onEvent(event) }
    }

    /// The server is kept under another key now: its push registration follows it; its catalogue
    /// does not (another installation, or one that had no id, has its own).
    func moveNotificationState(from old: String, to new: String) throws {
        guard old != new else { return }
        try directory.devices.move(old, to: new)
        try directory.catalogues.remove(old)
    }

    /// Gives `record` the id `new`, refusing an id another enrolled server (one of `others`)
    /// already has. A changed id (not a first one) unverifies every alternative and yields the
    /// event to emit once saved.
    static func reidentify(_ record: inout ServerRecord, as new: InstanceID, among others: [ServerRecord]) throws
        -> ClientEvent?
    {
        if let other = others.first(where: { $0.key == new.description }) {
            throw anotherServersID(new, at: record.primary, other: other)
        }
        guard let old = record.instanceID, old != new else {
            record.instanceID = new
            return nil
        }
        record.instanceID = new
        record.lastWinner = record.primary.url
        // Another installation has another key: it is pinned again from the primary.
        record.publicKey = nil
        for index in record.alternatives.indices { record.alternatives[index].verifiedPaths = [:] }
        return .identityChanged(
            server: new.description, old: old, new: new, unverifiedAlternatives: record.alternatives.map(\.address.url))
    }

    /// The refusal of an id that another enrolled server has.
    static func anotherServersID(_ id: InstanceID, at address: ServerAddress, other: ServerRecord) -> ClientError {
        .badAnswer(
            address: address.url,
            detail: "it answers as \(id), which is the id of another enrolled server (\(other.primary.url)); "
                + "remove one of the two")
    }

    /// Signs the account out after the server refused `refused`: only while that is still the
    /// stored token, in one change under the directory's lock. A sign-in in another process that
    /// stored a new one meanwhile (it ended the old session first) keeps its session.
    func markSignedOut(_ key: String, refused: String) throws {
        var signedOut = false
        try directory.update(key) { record in
            guard (try? vault.token(for: key)) == refused else { return }
            guard (try? vault.remove(server: key)) != nil else { return }
            record.signedOut = true
            signedOut = true
        }
        forgetWinner(key)
        if signedOut { onEvent(.signedOut(server: key)) }
    }

    static func errorCodes(_ response: ClientResponse) -> [String] {
        (try? JSONDecoder().decode(AuthEnvelope.self, from: response.body))?.errors?.map(\.code) ?? []
    }
}

import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportStorage
import HomeportWire

/// The product API: what a product written in another language, behind forward auth, asks of
/// Homeport server to server, on a listener of its own (`--product-listen`), with a product key
/// (`Authorization: Bearer KEY`, made by `homeport-server product-keys create`).
///
/// - `POST /product/v1/notifications` notifies one account through the same path as
///   ``PushCenter/notify(_:to:)``: the log, the
///   in-app stream, mutes and the push outbox. An `Idempotency-Key` makes a retry (the same
///   body) deliver once; the key with another body is refused (422).
/// - `PUT /product/v1/catalogue` declares the product's notification codes: they join the
///   server's catalogue, on every replica within a second, and its version (`mv`) changes.
/// - `GET /product/v1/accounts/{id}` says an account's address, whether it is verified, and
///   its standing.
///
/// The key is looked up on every request, so a revocation holds at once on every replica.
package struct ProductAPI: Sendable {
    let database: any Database
    let push: PushCenter
    let clock: any WallClock

    /// The routes of the product listener.
    func router() -> Router<EmptyRequestContext> {
        var router = Router<EmptyRequestContext>()
        router.post(ProductAPIPath.notifications) { request, _ in try notify(request) }
        router.get(ProductAPIPath.accounts + "/:id") { request, _ in try account(request) }
        router.get(ProductAPIPath.accounts) { request, _ in try accountByEmail(request) }
        router.put(ProductAPIPath.catalogue) { request, _ in try declare(request) }
        return router
    }

    /// The key the request carries, once, in `Authorization: Bearer`; 401 otherwise.
    func authenticate(_ request: HTTPRequest) throws -> ProductKey {
        let values = request.headers.values("Authorization")
        guard values.count == 1, let value = values.first, value.lowercased().hasPrefix("bearer "),
            let key = try ProductKeyStore(database).live(
                keyHash: SecretToken.storedForm(of: value.dropFirst(7).trimmingCharacters(in: .whitespaces)))
        else {
            throw HTTPError(
                status: 401, code: APIErrorCode.notAuthenticated,
                message: "Send a working product key, once: Authorization: Bearer KEY.",
                headers: ["WWW-Authenticate": "Bearer"])
        }
        return key
    }

    func notify(_ request: HTTPRequest) throws -> HTTPResponse {
        let key = try authenticate(request)
        let body = try Self.decode(ProductNotificationRequest.self, request.body)
        guard (body.email == nil) != (body.accountId == nil) else {
            throw HTTPError.invalidField("email", "Name the account by email or by accountId, one of them.")
        }
        let idempotency = try Self.idempotencyKey(request)
        // A retry is the same request: its body's digest is kept with the claim.
        let requestHash = Digest.hex(Digest.sha256(Array(request.body)))
        // A retry of a request that made its notification gets that answer, before anything is
        // checked again (a code revoked since, a rule tightened since, must not turn a delivered
        // notification into a failure). The claim below settles the race of two first tries.
        if let idempotency, let sent = try ProductKeyStore(database).sent(key: key.id, idempotencyKey: idempotency) {
            guard sent.requestHash == requestHash else { throw Self.reusedKey }
            return try Self.accepted(seq: sent.seq, queued: sent.queued)
        }
        try checkSender(of: body.code, key: key)
        let userID = try account(of: body)
        // Claim, notification and what it made are one transaction: a crash keeps all or none,
        // so a key never sticks half-done, and nothing acknowledged is lost or made twice.
        let hook = idempotency.map { idempotency in
            PushCenter.TransactionHook(
                before: { db in
                    let store = ProductKeyStore(db)
                    let now = clock.unixSeconds
                    if try store.claim(key: key.id, idempotencyKey: idempotency, requestHash: requestHash, now: now) {
                        return nil
                    }
                    guard let sent = try store.sent(key: key.id, idempotencyKey: idempotency),
                        sent.requestHash == requestHash
                    else { throw Self.reusedKey }
                    return PushCenter.Delivery(seq: sent.seq, queued: sent.queued, muted: false)
                },
                after: { db, delivery in
                    try ProductKeyStore(db).complete(
                        key: key.id, idempotencyKey: idempotency, userID: userID, seq: delivery.seq,
                        queued: delivery.queued)
                })
        }
        do {
            let delivery = try push.notify(
                ProductNotification(
                    code: body.code, title: body.title, body: body.body, thread: body.thread, objectID: body.id,
                    data: body.data), to: userID, within: hook)
            return try Self.accepted(seq: delivery.seq, queued: delivery.queued)
        } catch let refusal as PushCenter.Refusal {
            throw Self.refusal(refusal, body)
        }
    }

    /// `PUT /product/v1/catalogue`: replaces the key's codes; 200 with the whole catalogue.
    func declare(_ request: HTTPRequest) throws -> HTTPResponse {
        let key = try authenticate(request)
        let codes = try Self.decode(ProductCatalogueRequest.self, request.body).codes
        guard codes.count <= ProductCatalogueRequest.maximumCodes else {
            throw HTTPError.invalidField(
                "codes", "Declare at most \(ProductCatalogueRequest.maximumCodes) codes with one key.")
        }
        var seen: Set<String> = []
        for (index, code) in codes.enumerated() {
            let field = "codes[\(index)]"
            if let problem = ServerCatalogue.problem(code) {
                throw HTTPError.invalidField(
                    ServerCatalogue.isCode(code.code) ? field + ".title" : field + ".code",
                    problem.capitalizedFirst + ".")
            }
            guard !ServerCatalogue.isReserved(code.code) else {
                throw HTTPError.invalidField(
                    field + ".code",
                    "The namespace \(Self.reservedNamespace) is Homeport's own, in any spelling; use the product's.")
            }
            guard seen.insert(code.code).inserted else {
                throw HTTPError.invalidField(field + ".code", "\(code.code) is declared twice.")
            }
            guard !push.settings.extraCodes.contains(where: { $0.code == code.code }) else {
                throw Self.taken(field, code.code, by: "the operator's catalogue")
            }
        }
        try database.transaction { db in
            let taken = try ProductCatalogueStore(db).replace(key: key.id, with: codes)
            if let first = taken.first, let index = codes.firstIndex(where: { $0.code == first }) {
                throw Self.taken("codes[\(index)]", first, by: "another product key")
            }
        }
        return try .json(push.refreshCatalogue().answer)
    }

    /// The namespace of Homeport's own codes, which no product declares.
    static let reservedNamespace = "homeport/core"

    static func taken(_ field: String, _ code: String, by owner: String) -> HTTPError {
        HTTPError(
            status: 409, code: "code_taken", message: "\(code) is declared by \(owner); use another name.",
            field: field + ".code")
    }

    func account(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try authenticate(request)
        guard let id = request.pathParameters["id"].flatMap({ Int64($0) }), id > 0,
            let account = try AccountStore(database).find(id: id)
        else { throw HTTPError(status: 404, code: APIErrorCode.notFound, message: "No account has this id.") }
        return try describe(account)
    }

    /// `GET /product/v1/accounts?email=ADDRESS`: the account that signs in with the address now
    /// (a product resolves an address to an account id at the moment it acts, and stores the id:
    /// the address may belong to somebody else later).
    func accountByEmail(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try authenticate(request)
        guard let text = request.query["email"] else {
            throw HTTPError.invalidField("email", "Name the account: ?email=ADDRESS.")
        }
        guard let email = Credentials.normalizedEmail(text) else {
            throw HTTPError.invalidField("email", "This is not an address Homeport takes.")
        }
        guard let account = try AccountStore(database).find(email: email) else {
            throw HTTPError(status: 404, code: APIErrorCode.notFound, message: "No account signs in with this address.")
        }
        return try describe(account)
    }

    private func describe(_ account: Account) throws -> HTTPResponse {
        let verified = try EmailVerificationStore(database).isVerified(userID: account.id)
        return try .json(
            ProductAccount(
                id: account.id, email: account.email, verified: verified, standing: account.approval.rawValue,
                groups: try AccountGroups(database).groups(userID: account.id)))
    }

    /// The account a notification is for: by id, or by address.
    /// A key notifies with the codes it declared and the operator's (`--catalogue`, a Swift
    /// product's own): another key's code, or Homeport's own, is refused naming `code`.
    private func checkSender(of code: String, key: ProductKey) throws {
        guard !ServerCatalogue.isReserved(code) else {
            throw HTTPError.invalidField(
                "code", "The namespace \(Self.reservedNamespace) is Homeport's own: a product sends its own codes.")
        }
        guard !push.settings.extraCodes.contains(where: { $0.code == code }) else { return }
        // Not a code at all (a NUL, a stray character): no key owns it; the catalogue refuses it.
        guard ServerCatalogue.isCode(code) else { return }
        if let owner = try ProductCatalogueStore(database).owner(of: code), owner != key.id {
            throw HTTPError.invalidField(
                "code", "'\(code)' is another product key's code: a key sends the codes it declared.")
        }
    }

    private func account(of body: ProductNotificationRequest) throws -> Int64 {
        if let id = body.accountId {
            guard id > 0, try AccountStore(database).find(id: id) != nil else {
                throw HTTPError.invalidField("accountId", "No account has this id.")
            }
            return id
        }
        guard let email = body.email.flatMap(Credentials.normalizedEmail),
            let account = try AccountStore(database).find(email: email)
        else { throw HTTPError.invalidField("email", "No account signs in with this address.") }
        return account.id
    }

    /// `Idempotency-Key`: 1–200 printable ASCII characters, sent once; `nil` without one.
    static func idempotencyKey(_ request: HTTPRequest) throws -> String? {
        let values = request.headers.values("Idempotency-Key")
        guard !values.isEmpty else { return nil }
        guard values.count == 1, let key = values.first, (1...200).contains(key.utf8.count),
            key.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw HTTPError.invalidField(
                "Idempotency-Key", "An Idempotency-Key is 1–200 printable ASCII characters, sent once.")
        }
        return key
    }

    static let reusedKey = HTTPError(
        status: 422, code: "idempotency_key_reused",
        message: "This Idempotency-Key was sent with another request; use a new one.")

    static func accepted(seq: Int64, queued: Int) throws -> HTTPResponse {
        try .json(ProductNotificationAnswer(id: seq, queued: queued), status: 202)
    }

    /// A refusal of the notification, naming the field at fault.
    static func refusal(_ refusal: PushCenter.Refusal, _ body: ProductNotificationRequest) -> HTTPError {
        switch refusal {
        case .unknownCode: .invalidField("code", refusal.description)
        case .invalidThread: .invalidField("thread", refusal.description)
        case .invalidText:
            .invalidField(
                (1...200).contains(body.title.count) && DisplayText.isShown(body.title) ? "body" : "title",
                refusal.description)
        case .payloadTooLarge: .invalidField("body", refusal.description)
        case .noAccount: .invalidField(body.accountId != nil ? "accountId" : "email", refusal.description)
        case .invalidData: .invalidField("data", refusal.description.capitalizedFirst + ".")
        case .identityUnavailable:
            .unavailable(code: APIErrorCode.unavailable, message: "The installation's identity cannot be read.")
        case .notInTransaction: .internalError
        }
    }
}

extension ProductAPI {
    /// Decodes a request body; a 400 naming the field at fault (`codes[2].title`) otherwise.
    package static func decode<Body: Decodable>(_ type: Body.Type, _ data: Data) throws -> Body {
        func name(_ path: [any CodingKey]) -> String {
            path.reduce("") { name, key in
                key.intValue.map { "\(name)[\($0)]" } ?? (name.isEmpty ? key.stringValue : "\(name).\(key.stringValue)")
            }
        }
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(data)) else {
            throw HTTPError.invalidField("body", "Send a JSON object that names each key once.")
        }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch DecodingError.keyNotFound(let key, let context) {
            let field = name(context.codingPath + [key])
            throw HTTPError.invalidField(field, "\(field) is required.")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            let field = context.codingPath.isEmpty ? "body" : name(context.codingPath)
            throw HTTPError.invalidField(
                field, field == "body" ? "Send a JSON object." : "\(field) is not of the right type.")
        } catch {
            throw HTTPError.invalidField("body", "Send a JSON object.")
        }
    }
}

extension String {
    /// The sentence with its first letter in capitals.
    fileprivate var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}

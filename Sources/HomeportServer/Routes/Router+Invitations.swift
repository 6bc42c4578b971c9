import Foundation
import HomeportHTTP
import HomeportWire

extension Router where Context == RequestContext {
    /// The invitation routes under the API prefix (signed in, header token only):
    /// - `POST /api/v1/invitations`: an invitation, for the accounts `--invitations` allows
    ///   (201 with its code, shown once; 403 `forbidden` for anyone else, or for a group the
    ///   member is not in; 429 past the day's budget);
    /// - `GET /api/v1/invitations`: the invitations the caller made, newest first;
    /// - `DELETE /api/v1/invitations/{id}`: revokes one the caller made (204; 404 otherwise).
    mutating func addInvitations(_ invitations: AppInvitations) {
        post(HomeportPath.invitations) { request, context in
            let account = try Self.caller(context)
            let body = try Self.invitationRequest(request)
            switch try invitations.create(
                by: account, email: body.email, groups: body.groups ?? [], uses: body.uses, life: body.expiresIn)
            {
            case .made(let invitation, let code, let link, let mailed):
                var answer = Self.answer(invitation)
                (answer.code, answer.link, answer.mailed) = (code, link, mailed)
                return try .json(answer, status: 201)
            case .invalid(let field, let message):
                throw HTTPError.invalidField(field, message.prefix(1).uppercased() + message.dropFirst() + ".")
            case .forbidden(let message):
                throw HTTPError(status: .forbidden, code: APIErrorCode.forbidden, message: message)
            case .rateLimited(let retryAfter):
                throw HTTPError(
                    status: 429, code: APIErrorCode.rateLimited, message: "Too many invitations; try again later.",
                    headers: ["Retry-After": String(retryAfter)])
            }
        }
        get(HomeportPath.invitations) { _, context in
            let account = try Self.caller(context)
            return try .json(InvitationListAnswer(invitations: try invitations.all(by: account).map(Self.answer)))
        }
        delete(HomeportPath.invitations + "/:id") { request, context in
            let account = try Self.caller(context)
            let id = try request.parameter("id", as: Int64.self)
            guard try invitations.revoke(id: id, by: account) else {
                throw HTTPError(
                    status: .notFound, code: APIErrorCode.notFound, message: "You made no invitation with this id.")
            }
            return HTTPResponse(status: 204)
        }
    }

    private static func caller(_ context: RequestContext) throws -> Account {
        guard case .signedIn(_, let account) = context.caller else { throw RequireSignedIn.refusal }
        return account
    }

    /// The request's body as an invitation's terms: a JSON object without repeated keys, each
    /// field of its type; anything else is 400 naming the field.
    private static func invitationRequest(_ request: HTTPRequest) throws -> InvitationRequest {
        let usage =
            "Send a JSON object: {\"email\": \"…\", \"groups\": [\"…\"], \"uses\": N, \"expiresIn\": SECONDS}, each may be left out."
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(request.body)),
            let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
        else { throw HTTPError.invalidField("invitation", usage) }
        // A misspelt term is no term left out: `emial` would make an invitation for anyone.
        if let unknown = object.keys.sorted().first(where: { !Self.invitationTerms.contains($0) }) {
            throw HTTPError.invalidField(
                String(unknown.prefix(40)), "'\(unknown.prefix(40))' is not a term of an invitation. " + usage)
        }
        if let terms = try? JSONDecoder().decode(InvitationRequest.self, from: request.body) { return terms }
        // The field that does not decode, each tried alone (a number that is no integer, say,
        // is reported without its key).
        let field =
            Self.invitationTerms.first { key in
                guard let value = object[key],
                    let alone = try? HTTPResponse.encode(untyped: [key: value])
                else { return false }
                return (try? JSONDecoder().decode(InvitationRequest.self, from: alone)) == nil
            } ?? "invitation"
        throw HTTPError.invalidField(field, "'\(field)' is not of its type. " + usage)
    }

    /// The terms an invitation's request may hold.
    private static let invitationTerms = ["email", "groups", "uses", "expiresIn"]

    private static func answer(_ invitation: Invitation) -> InvitationAnswer {
        InvitationAnswer(
            id: invitation.id, email: invitation.email, groups: invitation.groups, usesLeft: invitation.usesLeft,
            expiresAt: invitation.expiresAt, createdAt: invitation.createdAt, revokedAt: invitation.revokedAt)
    }
}

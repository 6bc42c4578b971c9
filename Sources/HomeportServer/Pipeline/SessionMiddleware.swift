import HomeportHTTP
import HomeportWire

/// Reads the caller once, through the one ``SessionReader``, and hands it on in the context.
///
/// At the app's doors the credential is the session-token header and only it; sent twice it is
/// refused as invalid, whatever the values. At the web door it is the session cookie, and a
/// cookie naming no live session is simply no session.
struct SessionMiddleware: HTTPMiddleware {
    /// Where the credential travels.
    enum Credential: Sendable {
        /// The session-token header, for app sessions.
        case header
        /// A cookie of this name, for web sessions.
        case cookie(String)
    }

    let reader: SessionReader
    let credential: Credential

    func handle(
        _ request: HTTPRequest, context: RequestContext,
        next: (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        var context = context
        switch credential {
        case .header:
            let values = request.headers.values(HomeportHeader.sessionToken)
            context.caller = values.count > 1 ? .invalid : try reader.caller(token: values.first, kind: .app)
        case .cookie(let name):
            let caller = try reader.caller(token: request.cookies[name], kind: .web)
            if case .invalid = caller { context.caller = .none } else { context.caller = caller }
        }
        return try next(request, context)
    }
}

/// Refuses every request without a signed-in caller with the API's one 401, which never says
/// whether the token expired, was signed out, never existed, or was missing.
struct RequireSignedIn: HTTPMiddleware {
    static let refusal = HTTPError(
        status: 401, code: APIErrorCode.notAuthenticated, message: "Sign in to use this route.")

    func handle(
        _ request: HTTPRequest, context: RequestContext,
        next: (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        guard context.caller.isSignedIn else { throw Self.refusal }
        return try next(request, context)
    }
}

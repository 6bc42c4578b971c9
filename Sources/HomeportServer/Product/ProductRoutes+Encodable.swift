import HomeportHTTP

extension ProductRoutes {
    /// Adds a signed-in route whose handler answers an `Encodable` value: written as JSON with
    /// `status` (keys sorted, as every answer of Homeport's).
    public mutating func add<Answer: Encodable>(
        _ method: HTTPMethod, _ path: String = "", status: HTTPStatus = .ok, requiring group: String? = nil,
        placement: HandlerPlacement = .worker, _ handler: @escaping @Sendable (HTTPRequest, SignedIn) throws -> Answer
    ) {
        add(method, path, requiring: group, placement: placement) { request, caller in
            try .json(handler(request, caller), status: status)
        }
    }

    /// Adds a signed-in `GET` route answering an `Encodable` value (see ``add(_:_:status:requiring:placement:_:)``).
    public mutating func get<Answer: Encodable>(
        _ path: String = "", status: HTTPStatus = .ok, requiring group: String? = nil,
        placement: HandlerPlacement = .worker, _ handler: @escaping @Sendable (HTTPRequest, SignedIn) throws -> Answer
    ) {
        add(.get, path, status: status, requiring: group, placement: placement, handler)
    }

    /// Adds a signed-in `POST` route answering an `Encodable` value.
    public mutating func post<Answer: Encodable>(
        _ path: String = "", status: HTTPStatus = .ok, requiring group: String? = nil,
        placement: HandlerPlacement = .worker, _ handler: @escaping @Sendable (HTTPRequest, SignedIn) throws -> Answer
    ) {
        add(.post, path, status: status, requiring: group, placement: placement, handler)
    }

    /// Adds a signed-in `PUT` route answering an `Encodable` value.
    public mutating func put<Answer: Encodable>(
        _ path: String = "", status: HTTPStatus = .ok, requiring group: String? = nil,
        placement: HandlerPlacement = .worker, _ handler: @escaping @Sendable (HTTPRequest, SignedIn) throws -> Answer
    ) {
        add(.put, path, status: status, requiring: group, placement: placement, handler)
    }

    /// Adds a signed-in `PATCH` route answering an `Encodable` value.
    public mutating func patch<Answer: Encodable>(
        _ path: String = "", status: HTTPStatus = .ok, requiring group: String? = nil,
        placement: HandlerPlacement = .worker, _ handler: @escaping @Sendable (HTTPRequest, SignedIn) throws -> Answer
    ) {
        add(.patch, path, status: status, requiring: group, placement: placement, handler)
    }

    /// Adds a signed-in `DELETE` route answering an `Encodable` value.
    public mutating func delete<Answer: Encodable>(
        _ path: String = "", status: HTTPStatus = .ok, requiring group: String? = nil,
        placement: HandlerPlacement = .worker, _ handler: @escaping @Sendable (HTTPRequest, SignedIn) throws -> Answer
    ) {
        add(.delete, path, status: status, requiring: group, placement: placement, handler)
    }
}

extension HTTPRequest {
    /// The path parameter `name` (`:id` in `/books/:id`) read as `type` (`Int64`, `Int`, a
    /// `String`); one that is missing or does not read as `type` throws `400 invalid_field`
    /// naming it, so a handler never sees a value it did not ask for.
    public func parameter<Value: LosslessStringConvertible>(_ name: String, as type: Value.Type) throws -> Value {
        guard let text = pathParameters[name], let value = Value(text) else {
            throw HTTPError.invalidField(name, "'\(name)' in the path is not a valid \(Value.self).")
        }
        return value
    }
}

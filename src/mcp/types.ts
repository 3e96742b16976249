/**
 * The MCP shapes readback produces, declared here rather than imported, so that readback/mcp's types
 * resolve whichever SDK line is installed (`@modelcontextprotocol/sdk` 1.x or `@modelcontextprotocol/server` 2.x).
 */

/** A tool result as readback returns it: an MCP `CallToolResult` with one text item. */
export interface McpToolResult {
  content: { type: 'text'; text: string }[];
  /** The completion as plain JSON, matching the tool's `outputSchema`. */
  structuredContent?: Record<string, unknown>;
  isError: boolean;
  [key: string]: unknown;
}

/** MCP tool annotations (hints to clients about what a tool does). */
export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

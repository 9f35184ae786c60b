// Generated from openapi.yaml by scripts/schema.mjs (openapi-typescript): do not edit.
// Regenerate with `npm run generate`; `npm run check:schema` fails when it is stale.

export interface paths {
    "/synthesize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rebuild compact multi-turn context for the agent's next model call */
        post: operations["synthesize"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/compress-history": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Replace older chat history by a sectioned summary, updated incrementally */
        post: operations["compress_history"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/summarize-trace": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Shrink a ReAct action trace: older actions grouped by tool, recent ones in full */
        post: operations["summarize_trace"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/rescue": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Answer the user from an out-of-steps agent's evidence, in one tools-free call */
        post: operations["rescue"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/expand/{handle}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The original messages (or actions) that a compaction replaced */
        get: operations["expand"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/summarize-recall": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Synthesize recalled memories into one short answer with citations */
        post: operations["summarize_recall"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/reflect": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Turn one iteration's tool calls into insights, learnings and a verdict */
        post: operations["reflect"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: the process serves HTTP */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: dependencies are usable */
        get: operations["readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** ActionIn */
        ActionIn: {
            /**
             * Action
             * @description The tool the agent called.
             */
            action: string;
            /**
             * Action Input
             * @default
             */
            action_input?: string | {
                [key: string]: unknown;
            } | unknown[];
            /**
             * Observation
             * @default
             */
            observation?: string;
            /**
             * Outcome
             * @description How the call ended, when the caller knows; error, failure and timeout are failures (as in /reflect).
             */
            outcome?: ("success" | "error" | "failure" | "timeout") | null;
            /** Thought */
            thought?: string | null;
        };
        /** BreakpointOut */
        BreakpointOut: {
            /**
             * Message
             * @description Index in 'messages'.
             */
            message: number;
            /**
             * Block
             * @description Index of the content block in that message.
             */
            block: number;
        };
        /** CacheOut */
        CacheOut: {
            /**
             * Hit
             * @description The LLM result came from the cache.
             */
            hit: boolean;
            /**
             * Key Age Seconds
             * @description Age of the cached result on a hit.
             */
            key_age_seconds: number | null;
        };
        /** CallIn */
        CallIn: {
            /** Tool */
            tool: string;
            /** Params */
            params?: {
                [key: string]: unknown;
            } | string;
            /**
             * Output
             * @description The raw output (also taken as raw_output).
             * @default
             */
            output?: string;
            /**
             * Outcome
             * @description How the call ended; error, failure and timeout are failures, kept apart in the record.
             */
            outcome?: ("success" | "error" | "failure" | "timeout") | null;
            /**
             * Duration Ms
             * @description How long the call took, in milliseconds (also taken as execution_time).
             */
            duration_ms?: number | null;
            /**
             * Cost
             * @description A number, or an object of numbers ({"usd": 0.002, "tokens": 812}): its usd, total or amount is the call's cost.
             */
            cost?: number | {
                [key: string]: number;
            } | null;
            /**
             * Timestamp
             * @description When it ran: ISO 8601 (2026-11-26T07:30:00Z) or seconds since the epoch.
             */
            timestamp?: string | number | null;
            /**
             * Rationale
             * @description Why the agent made the call, in its words; deep mode reads it (also taken as tool_selection_rationale).
             */
            rationale?: string | null;
        };
        /** CitationOut */
        CitationOut: {
            /** Memory Id */
            memory_id: string;
            /** Snippet */
            snippet: string;
            /** Score */
            score: number | null;
            /** Layer */
            layer: string | null;
        };
        /**
         * CompressHistoryRequest
         * @description Send exactly one of 'messages', 'contents', 'input'.
         * @example {
         *       "keep_last_n": 2,
         *       "messages": [
         *         {
         *           "content": "You are a support agent.",
         *           "role": "system"
         *         },
         *         {
         *           "content": "Rebook me to Seattle on May 20, economy only.",
         *           "role": "user"
         *         },
         *         {
         *           "role": "assistant",
         *           "tool_calls": [
         *             {
         *               "function": {
         *                 "arguments": "{\"to\": \"SEA\"}",
         *                 "name": "search_flights"
         *               },
         *               "id": "c1",
         *               "type": "function"
         *             }
         *           ]
         *         },
         *         {
         *           "content": "[{\"flight\": \"HAT069\", \"price\": 121}]",
         *           "role": "tool",
         *           "tool_call_id": "c1"
         *         },
         *         {
         *           "content": "HAT069 leaves at 06:00 for $121. Book it?",
         *           "role": "assistant"
         *         },
         *         {
         *           "content": "Yes, please.",
         *           "role": "user"
         *         }
         *       ],
         *       "mode": "fast",
         *       "trigger_messages": 4
         *     }
         */
        CompressHistoryRequest: {
            /**
             * Messages
             * @description OpenAI Chat Completions or Anthropic messages.
             */
            messages?: {
                [key: string]: unknown;
            }[] | null;
            /**
             * System
             * @description Anthropic: the top-level system prompt.
             */
            system?: string | {
                [key: string]: unknown;
            }[] | null;
            /**
             * Contents
             * @description Gemini: the conversation's contents.
             */
            contents?: {
                [key: string]: unknown;
            }[] | null;
            /**
             * Systeminstruction
             * @description Gemini: the system instruction (also taken as system_instruction, the REST API's snake_case spelling, and given back under the key it came in).
             */
            systemInstruction?: {
                [key: string]: unknown;
            } | null;
            /**
             * Input
             * @description OpenAI Responses: the input items.
             */
            input?: string | {
                [key: string]: unknown;
            }[] | null;
            /**
             * Instructions
             * @description OpenAI Responses: the instructions.
             */
            instructions?: string | null;
            /**
             * Format
             * @description auto, openai, anthropic, gemini or responses.
             * @default auto
             */
            format?: string;
            /**
             * Trigger Messages
             * @description Compress above this many messages (default from settings, 50).
             */
            trigger_messages?: number | null;
            /**
             * Trigger Tokens
             * @description Also compress above this many tokens.
             */
            trigger_tokens?: number | null;
            /**
             * Trigger Share
             * @description Also compress above this share of the model's context window (0.75: three quarters); needs a 'model' that LiteLLM's model map lists, or 'context_window'.
             */
            trigger_share?: number | null;
            /**
             * Model
             * @description The model the history is for, e.g. gpt-4o; used with 'trigger_share'.
             */
            model?: string | null;
            /**
             * Context Window
             * @description The model's context window in tokens, when 'model' is not enough to know it.
             */
            context_window?: number | null;
            /**
             * Keep Last N
             * @description Messages kept verbatim at the end (default 10).
             */
            keep_last_n?: number | null;
            /**
             * Mode
             * @description deep: LLM summary; fast: deterministic extraction; auto: deep when an LLM is configured.
             * @default auto
             * @enum {string}
             */
            mode?: "auto" | "fast" | "deep";
            /**
             * Budget Tokens
             * @description The most tokens the output may have: above it the history is compressed whatever the triggers say, and when the summary and the last messages would pass it, fewer of the last messages are kept (a tool call never parted from its result). 422 when the system prompt, the task, the user's messages and the summary alone are past it.
             */
            budget_tokens?: number | null;
            /** Synthesis Provider */
            synthesis_provider?: string | null;
            /** Synthesis Model */
            synthesis_model?: string | null;
            /** Synthesis Temperature */
            synthesis_temperature?: number | null;
            /**
             * On Llm Error
             * @default fallback
             * @enum {string}
             */
            on_llm_error?: "fallback" | "error";
            /**
             * Force Refresh
             * @description Skip the cached LLM result, if any.
             * @default false
             */
            force_refresh?: boolean;
        };
        /** CompressHistoryResponse */
        CompressHistoryResponse: {
            /** Messages */
            messages?: {
                [key: string]: unknown;
            }[] | null;
            /** System */
            system?: string | {
                [key: string]: unknown;
            }[] | null;
            /** Contents */
            contents?: {
                [key: string]: unknown;
            }[] | null;
            /** Systeminstruction */
            systemInstruction?: {
                [key: string]: unknown;
            } | null;
            /** Input */
            input?: {
                [key: string]: unknown;
            }[] | string | null;
            /** Instructions */
            instructions?: string | null;
            /** Format */
            format: string;
            /** Compressed */
            compressed: boolean;
            /**
             * Reason
             * @description Why it compressed, or why not (trigger, nothing older).
             */
            reason: string;
            /**
             * Incremental
             * @description A summary block from an earlier call was updated.
             */
            incremental: boolean;
            /** Mode */
            mode: string;
            /** Degraded */
            degraded: boolean;
            /** Fallback Reason */
            fallback_reason: string | null;
            llm: components["schemas"]["LLMUsageOut"] | null;
            cache: components["schemas"]["CacheOut"];
            stats: components["schemas"]["StatsOut"];
            receipt: components["schemas"]["ReceiptOut"];
        };
        /** EnrichedCallOut */
        EnrichedCallOut: {
            /** Tool */
            tool: string;
            /** Params */
            params: {
                [key: string]: unknown;
            } | string;
            /**
             * Output
             * @description Kept to about 1000 characters, for debugging.
             */
            output: string;
            /**
             * Outcome
             * @description As the caller said, else success or error as read from the output.
             * @enum {string}
             */
            outcome: "success" | "error" | "failure" | "timeout";
            /** Duration Ms */
            duration_ms: number | null;
            /** Cost */
            cost: number | null;
            /** Timestamp */
            timestamp: string | null;
            /** Rationale */
            rationale: string | null;
            /** Insights */
            insights: string[];
            /** Learning */
            learning: string;
            /**
             * Relevance
             * @enum {string}
             */
            relevance: "high" | "medium" | "low";
            /** Next Suggested Actions */
            next_suggested_actions: string[];
        };
        /** EvidenceOut */
        EvidenceOut: {
            /** Steps */
            steps: number;
            /** Chars */
            chars: number;
            /**
             * Compacted
             * @description Some evidence was shrunk to fit the budget.
             */
            compacted: boolean;
            /**
             * Tokens
             * @description The prompt's tokens, counted when 'budget_tokens' was sent.
             */
            tokens?: number | null;
        };
        /**
         * ExpandResponse
         * @description The originals in the format of the request that dropped them (or trace actions).
         */
        ExpandResponse: {
            /** Messages */
            messages?: {
                [key: string]: unknown;
            }[] | null;
            /** System */
            system?: string | {
                [key: string]: unknown;
            }[] | null;
            /** Contents */
            contents?: {
                [key: string]: unknown;
            }[] | null;
            /** Systeminstruction */
            systemInstruction?: {
                [key: string]: unknown;
            } | null;
            /** Input */
            input?: {
                [key: string]: unknown;
            }[] | string | null;
            /** Instructions */
            instructions?: string | null;
            /** Handle */
            handle: string;
            /**
             * Format
             * @description openai, anthropic, gemini, responses or trace.
             */
            format: string;
            /** Kind */
            kind: string;
            /**
             * Actions
             * @description For trace handles.
             */
            actions?: {
                [key: string]: unknown;
            }[] | null;
        };
        /** GroupOut */
        GroupOut: {
            /** Tool */
            tool: string;
            /** Calls */
            calls: number;
            /** Summary */
            summary: string;
            /** Paths */
            paths: string[];
            /** Errors */
            errors: string[];
        };
        /** HTTPValidationError */
        HTTPValidationError: {
            /** Detail */
            detail?: components["schemas"]["ValidationError"][];
        };
        /** Health */
        Health: {
            /** Status */
            status: string;
            /** Checks */
            checks?: {
                [key: string]: string;
            };
        };
        /** LLMUsageOut */
        LLMUsageOut: {
            /** Provider */
            provider: string;
            /** Model */
            model: string;
            /** Input Tokens */
            input_tokens: number;
            /** Output Tokens */
            output_tokens: number;
        };
        /** LostFactsOut */
        LostFactsOut: {
            /** Total */
            total: number;
            /** Paths */
            paths: string[];
            /** Identifiers */
            identifiers: string[];
            /** Numbers */
            numbers: string[];
            /** Errors */
            errors: string[];
            /**
             * Complete
             * @description False when the transcript held more candidate facts than a receipt reads (10,000 distinct tokens, and as many error lines, of the dropped text and of the kept): the lists and the total then cover what was read, so a few lost facts may be missing and a few kept ones listed. Real agent runs hold a few thousand.
             * @default true
             */
            complete?: boolean;
        };
        /** MemoryIn */
        MemoryIn: {
            /** Id */
            id: string;
            /** Text */
            text: string;
            /** Score */
            score?: number | null;
            /**
             * Layer
             * @description The memory's layer (also taken as depth_layer, the seeds' name).
             */
            layer?: string | null;
        };
        /**
         * PastCallIn
         * @description A call of an earlier record; its enrichment fields are accepted and ignored.
         */
        PastCallIn: {
            /** Tool */
            tool: string;
            /** Params */
            params?: {
                [key: string]: unknown;
            } | string;
            /**
             * Output
             * @description The raw output (also taken as raw_output).
             * @default
             */
            output?: string;
            /**
             * Outcome
             * @description How the call ended; error, failure and timeout are failures, kept apart in the record.
             */
            outcome?: ("success" | "error" | "failure" | "timeout") | null;
            /**
             * Duration Ms
             * @description How long the call took, in milliseconds (also taken as execution_time).
             */
            duration_ms?: number | null;
            /**
             * Cost
             * @description A number, or an object of numbers ({"usd": 0.002, "tokens": 812}): its usd, total or amount is the call's cost.
             */
            cost?: number | {
                [key: string]: number;
            } | null;
            /**
             * Timestamp
             * @description When it ran: ISO 8601 (2026-11-26T07:30:00Z) or seconds since the epoch.
             */
            timestamp?: string | number | null;
            /**
             * Rationale
             * @description Why the agent made the call, in its words; deep mode reads it (also taken as tool_selection_rationale).
             */
            rationale?: string | null;
        };
        /**
         * PastIn
         * @description An earlier iteration: the 'record' of an earlier /reflect answer fits here.
         */
        PastIn: {
            /** Iteration */
            iteration?: number | null;
            /** Progress Assessment */
            progress_assessment?: ("advancing" | "stuck" | "regressing") | null;
            /**
             * Calls
             * @description At most CONTEXTSYNTH_MAX_REFLECT_CALLS (1000 by default).
             */
            calls?: components["schemas"]["PastCallIn"][];
        };
        /** PrefixOut */
        PrefixOut: {
            /**
             * Stable Messages
             * @description Leading messages of 'messages' (or the format's list) that every later call sends again as they are, while the agent only appends.
             */
            stable_messages: number;
            /** Stable Tokens */
            stable_tokens: number;
            /**
             * Steady Messages
             * @description Leading messages later calls send again as they are until the next block of older turns closes.
             */
            steady_messages: number;
            /** Steady Tokens */
            steady_tokens: number;
            /**
             * Cache Breakpoints
             * @description The content blocks this service marked with cache_control (cache_breakpoints).
             */
            cache_breakpoints: components["schemas"]["BreakpointOut"][];
        };
        /**
         * Problem
         * @description RFC 9457 problem details.
         */
        Problem: {
            /** Type */
            type: string;
            /** Title */
            title: string;
            /** Status */
            status: number;
            /** Detail */
            detail: string;
            /** Instance */
            instance?: string | null;
            /** Pointer */
            pointer?: string | null;
            /** Errors */
            errors?: {
                [key: string]: string;
            }[] | null;
            /**
             * Limit
             * @description The tenant's limit that refused the request: requests_per_minute, tokens_per_minute or tokens_per_day; or, for limit-exceeded, the setting (as its environment variable, such as CONTEXTSYNTH_MAX_TRACE_ACTIONS).
             */
            limit?: string | null;
            /**
             * Limit Value
             * @description That limit's value.
             */
            limit_value?: number | null;
            /**
             * Retry After
             * @description Seconds until the request fits, as in Retry-After.
             */
            retry_after?: number | null;
            /**
             * Tokens
             * @description The request's tokens, for a token limit.
             */
            tokens?: number | null;
        };
        /** PromptMessageOut */
        PromptMessageOut: {
            /** Role */
            role: string;
            /** Content */
            content: string;
        };
        /** Reasoning */
        Reasoning: {
            /**
             * Synthesis
             * @description Synthesis mode.
             */
            synthesis?: ("auto" | "fast" | "deep" | "custom" | "off") | null;
            /**
             * Synthesis Model
             * @description Model for LLM-backed modes.
             */
            synthesis_model?: string | null;
            /**
             * Synthesis Provider
             * @description Provider for LLM-backed modes.
             */
            synthesis_provider?: string | null;
            /** Synthesis Temperature */
            synthesis_temperature?: number | null;
            /**
             * Synthesis Strategy
             * @description Registered strategy for mode 'custom' (e.g. observation-mask).
             */
            synthesis_strategy?: string | null;
            /**
             * Strategies
             * @description Overrides per agent strategy; they win over the top-level fields. adaptive has none of its own (it runs the others by turns).
             */
            strategies?: {
                [key: string]: components["schemas"]["ReasoningBundle"];
            };
        };
        /** ReasoningBundle */
        ReasoningBundle: {
            /**
             * Synthesis
             * @description Synthesis mode.
             */
            synthesis?: ("auto" | "fast" | "deep" | "custom" | "off") | null;
            /**
             * Synthesis Model
             * @description Model for LLM-backed modes.
             */
            synthesis_model?: string | null;
            /**
             * Synthesis Provider
             * @description Provider for LLM-backed modes.
             */
            synthesis_provider?: string | null;
            /** Synthesis Temperature */
            synthesis_temperature?: number | null;
            /**
             * Synthesis Strategy
             * @description Registered strategy for mode 'custom' (e.g. observation-mask).
             */
            synthesis_strategy?: string | null;
        };
        /** ReceiptOut */
        ReceiptOut: {
            /** Dropped */
            dropped: components["schemas"]["SpanOut"][];
            lost_facts: components["schemas"]["LostFactsOut"];
        };
        /** RecordOut */
        RecordOut: {
            /** Iteration */
            iteration: number | null;
            /** Goal */
            goal: string;
            /** Timestamp */
            timestamp: string | null;
            /**
             * Mode
             * @description How the record was made.
             * @enum {string}
             */
            mode: "fast" | "deep";
            /** User Feedback */
            user_feedback: string | null;
            /** Calls */
            calls: components["schemas"]["EnrichedCallOut"][];
            /** Synthesis */
            synthesis: string;
            /**
             * Progress Assessment
             * @enum {string}
             */
            progress_assessment: "advancing" | "stuck" | "regressing";
        };
        /**
         * ReflectRequest
         * @example {
         *       "goal": "Find why test_parse fails",
         *       "iteration": 3,
         *       "mode": "fast",
         *       "tool_calls": [
         *         {
         *           "output": "FAILED test_parse - ValueError: bad month",
         *           "params": {
         *             "command": "pytest -x"
         *           },
         *           "tool": "bash"
         *         }
         *       ]
         *     }
         */
        ReflectRequest: {
            /** Synthesis Provider */
            synthesis_provider?: string | null;
            /** Synthesis Model */
            synthesis_model?: string | null;
            /** Synthesis Temperature */
            synthesis_temperature?: number | null;
            /**
             * On Llm Error
             * @default fallback
             * @enum {string}
             */
            on_llm_error?: "fallback" | "error";
            /**
             * Force Refresh
             * @description Skip the cached LLM result, if any.
             * @default false
             */
            force_refresh?: boolean;
            /** Goal */
            goal: string;
            /** Iteration */
            iteration?: number | null;
            /**
             * Tool Calls
             * @description At most CONTEXTSYNTH_MAX_REFLECT_CALLS (1000 by default).
             */
            tool_calls: components["schemas"]["CallIn"][];
            /**
             * History
             * @description Earlier records: at most CONTEXTSYNTH_MAX_REFLECT_HISTORY (100 by default), with at most CONTEXTSYNTH_MAX_REFLECT_HISTORY_CALLS calls (10,000 by default) in all.
             */
            history?: components["schemas"]["PastIn"][];
            /**
             * Mode
             * @default auto
             * @enum {string}
             */
            mode?: "auto" | "deep" | "fast";
            /**
             * Timestamp
             * @description When the iteration ran: ISO 8601 (2026-11-26T07:30:00Z) or seconds since the epoch.
             */
            timestamp?: string | number | null;
            /**
             * User Feedback
             * @description What the user said of the agent's work: the first line of the reasoning context, and read by deep mode.
             */
            user_feedback?: string | null;
            /**
             * Context Tokens
             * @description Most tokens of reasoning_context; calls past it are counted, not shown.
             * @default 400
             */
            context_tokens?: number;
        };
        /** ReflectResponse */
        ReflectResponse: {
            record: components["schemas"]["RecordOut"];
            /**
             * Reasoning Context
             * @description Layer 2: the user's feedback, then a line of insights per call, most relevant first, within context_tokens.
             */
            reasoning_context: string;
            /** Stuck */
            stuck: boolean;
            /** Stuck Reason */
            stuck_reason: string | null;
            /** Recovery Prompt */
            recovery_prompt: string | null;
            /** Mode */
            mode: string;
            /** Degraded */
            degraded: boolean;
            /** Fallback Reason */
            fallback_reason: string | null;
            cache: components["schemas"]["CacheOut"];
            llm: components["schemas"]["LLMUsageOut"] | null;
        };
        /**
         * RescueRequest
         * @description Send exactly one of 'messages', 'contents', 'input'.
         * @example {
         *       "dry_run": true,
         *       "max_steps": 3,
         *       "messages": [
         *         {
         *           "content": "You are a support agent.",
         *           "role": "system"
         *         },
         *         {
         *           "content": "Rebook me to Seattle on May 20, economy only.",
         *           "role": "user"
         *         },
         *         {
         *           "role": "assistant",
         *           "tool_calls": [
         *             {
         *               "function": {
         *                 "arguments": "{\"to\": \"SEA\"}",
         *                 "name": "search_flights"
         *               },
         *               "id": "c1",
         *               "type": "function"
         *             }
         *           ]
         *         },
         *         {
         *           "content": "[{\"flight\": \"HAT069\", \"price\": 121}]",
         *           "role": "tool",
         *           "tool_call_id": "c1"
         *         },
         *         {
         *           "content": "HAT069 leaves at 06:00 for $121. Book it?",
         *           "role": "assistant"
         *         },
         *         {
         *           "content": "Yes, please.",
         *           "role": "user"
         *         }
         *       ],
         *       "question": "Is the flight booked?"
         *     }
         */
        RescueRequest: {
            /**
             * Messages
             * @description OpenAI Chat Completions or Anthropic messages.
             */
            messages?: {
                [key: string]: unknown;
            }[] | null;
            /**
             * System
             * @description Anthropic: the top-level system prompt.
             */
            system?: string | {
                [key: string]: unknown;
            }[] | null;
            /**
             * Contents
             * @description Gemini: the conversation's contents.
             */
            contents?: {
                [key: string]: unknown;
            }[] | null;
            /**
             * Systeminstruction
             * @description Gemini: the system instruction (also taken as system_instruction, the REST API's snake_case spelling, and given back under the key it came in).
             */
            systemInstruction?: {
                [key: string]: unknown;
            } | null;
            /**
             * Input
             * @description OpenAI Responses: the input items.
             */
            input?: string | {
                [key: string]: unknown;
            }[] | null;
            /**
             * Instructions
             * @description OpenAI Responses: the instructions.
             */
            instructions?: string | null;
            /**
             * Format
             * @description auto, openai, anthropic, gemini or responses.
             * @default auto
             */
            format?: string;
            /**
             * Question
             * @description What the user asked the agent.
             */
            question: string;
            /**
             * Max Steps
             * @description The agent's step limit.
             */
            max_steps?: number | null;
            /**
             * Dry Run
             * @description Return the prompt without calling the LLM.
             * @default false
             */
            dry_run?: boolean;
            /**
             * Budget Tokens
             * @description The most tokens the prompt sent to the LLM may have (instructions, question and evidence): the evidence is shrunk until it fits, as well as CONTEXTSYNTH_RESCUE_EVIDENCE_CHARS. 422 when the instructions and the question alone leave it no room.
             */
            budget_tokens?: number | null;
            /** Synthesis Provider */
            synthesis_provider?: string | null;
            /** Synthesis Model */
            synthesis_model?: string | null;
            /** Synthesis Temperature */
            synthesis_temperature?: number | null;
            /**
             * On Llm Error
             * @default fallback
             * @enum {string}
             */
            on_llm_error?: "fallback" | "error";
            /**
             * Force Refresh
             * @description Skip the cached LLM result, if any.
             * @default false
             */
            force_refresh?: boolean;
        };
        /** RescueResponse */
        RescueResponse: {
            /**
             * Answer
             * @description Absent on a dry run.
             */
            answer: string | null;
            /** Dry Run */
            dry_run: boolean;
            /**
             * Prompt
             * @description Only on a dry run.
             */
            prompt: components["schemas"]["PromptMessageOut"][] | null;
            evidence: components["schemas"]["EvidenceOut"];
            /**
             * Degraded
             * @description The model gave no answer (the call failed, or its reply apologised or refused and quoted nothing from the evidence): the answer quotes the evidence instead.
             */
            degraded: boolean;
            /** Degraded Reason */
            degraded_reason: string | null;
            llm: components["schemas"]["LLMUsageOut"] | null;
            cache: components["schemas"]["CacheOut"];
        };
        /** ResolvedField */
        ResolvedField: {
            /** Value */
            value: unknown;
            /**
             * Source
             * @description strategies.<name>, top-level or default.
             */
            source: string;
        };
        /** SignalsOut */
        SignalsOut: {
            /** Iteration */
            iteration: number;
            /** Max Iterations */
            max_iterations: number | null;
            /** Task */
            task: string | null;
            /** Tools Called */
            tools_called: {
                [key: string]: number;
            };
            /**
             * Required Missing
             * @description Required tools not called yet.
             */
            required_missing: string[];
            /**
             * Required Failed
             * @description Required tools that were called but never succeeded (their failures are in recent_errors while recent).
             */
            required_failed: string[];
            /**
             * Outputs Done
             * @description Output tools that succeeded since the user last spoke, a write of only a scratch file (a reproduction script, a log) not counted.
             */
            outputs_done: string[];
            /** Recent Errors */
            recent_errors: string[];
        };
        /** SpanOut */
        SpanOut: {
            /** Handle */
            handle: string;
            /**
             * Kind
             * @enum {string}
             */
            kind: "compacted" | "summarized" | "truncated" | "masked";
            /**
             * First
             * @description Index of the first input message in the span.
             */
            first: number;
            /** Last */
            last: number;
            /** Messages */
            messages: number;
            /** Tools */
            tools: string[];
        };
        /** StatsOut */
        StatsOut: {
            /** Tokens Before */
            tokens_before: number;
            /** Tokens After */
            tokens_after: number;
            /** Messages Before */
            messages_before: number;
            /** Messages After */
            messages_after: number;
            /**
             * Reduction
             * @description 1 - tokens_after / tokens_before.
             */
            reduction: number;
        };
        /**
         * SummarizeRecallRequest
         * @example {
         *       "memories": [
         *         {
         *           "id": "m1",
         *           "score": 0.9,
         *           "text": "Mia always books an aisle seat."
         *         },
         *         {
         *           "id": "m2",
         *           "score": 0.4,
         *           "text": "Mia's user id is mia_li_3668."
         *         }
         *       ],
         *       "mode": "extractive",
         *       "query": "Which seat does Mia prefer?"
         *     }
         */
        SummarizeRecallRequest: {
            /** Synthesis Provider */
            synthesis_provider?: string | null;
            /** Synthesis Model */
            synthesis_model?: string | null;
            /** Synthesis Temperature */
            synthesis_temperature?: number | null;
            /**
             * On Llm Error
             * @default fallback
             * @enum {string}
             */
            on_llm_error?: "fallback" | "error";
            /**
             * Force Refresh
             * @description Skip the cached LLM result, if any.
             * @default false
             */
            force_refresh?: boolean;
            /** Query */
            query: string;
            /**
             * Memories
             * @description At most CONTEXTSYNTH_MAX_RECALL_MEMORIES (1000 by default).
             */
            memories: components["schemas"]["MemoryIn"][];
            /**
             * K
             * @description Memories to synthesize from.
             * @default 10
             */
            k?: number;
            /**
             * Max Tokens
             * @description Longest answer.
             * @default 500
             */
            max_tokens?: number;
            /**
             * Include Citations
             * @default true
             */
            include_citations?: boolean;
            /**
             * Mode
             * @description deep: the LLM; extractive: cited sentences, no LLM; auto: deep when a provider is configured.
             * @default auto
             * @enum {string}
             */
            mode?: "auto" | "deep" | "extractive";
        };
        /** SummarizeRecallResponse */
        SummarizeRecallResponse: {
            /** Summary */
            summary: string;
            /**
             * Refused
             * @description The memories do not support an answer.
             */
            refused: boolean;
            /** Citations */
            citations: components["schemas"]["CitationOut"][];
            /** Sources Used */
            sources_used: string[];
            /**
             * Removed Citations
             * @description Ids the model cited that were not given.
             */
            removed_citations: string[];
            /**
             * Removed Claims
             * @description Sentences of the answer no given memory was cited for: removed, as nothing the caller sent supports them.
             */
            removed_claims?: string[];
            /**
             * Flagged Claims
             * @description Kept claims whose cited memories share none of their numbers, names or identifiers: check them.
             */
            flagged_claims?: string[];
            /** Memories Considered */
            memories_considered: string[];
            /** Mode */
            mode: string;
            /** Degraded */
            degraded: boolean;
            /** Fallback Reason */
            fallback_reason: string | null;
            /** Cache Hit */
            cache_hit: boolean;
            cache: components["schemas"]["CacheOut"];
            llm: components["schemas"]["LLMUsageOut"] | null;
        };
        /**
         * SummarizeTraceRequest
         * @description Send exactly one of 'actions', 'scratchpad'.
         * @example {
         *       "actions": [
         *         {
         *           "action": "list_files",
         *           "action_input": "src/",
         *           "observation": "main.py\nutil.py"
         *         },
         *         {
         *           "action": "read_file",
         *           "action_input": "src/main.py",
         *           "observation": "def main(): ..."
         *         },
         *         {
         *           "action": "run_tests",
         *           "action_input": "tests/",
         *           "observation": "FAILED test_main - AssertionError",
         *           "outcome": "error"
         *         }
         *       ],
         *       "keep": 1,
         *       "mode": "fast",
         *       "trigger": 2
         *     }
         */
        SummarizeTraceRequest: {
            /**
             * Actions
             * @description At most CONTEXTSYNTH_MAX_TRACE_ACTIONS (1000 by default).
             */
            actions?: components["schemas"]["ActionIn"][] | null;
            /**
             * Scratchpad
             * @description ReAct text: Thought / Action / Action Input / Observation blocks; at most CONTEXTSYNTH_MAX_TRACE_ACTIONS 'Action:' lines, and CONTEXTSYNTH_MAX_MESSAGE_CHARS characters.
             */
            scratchpad?: string | null;
            /**
             * Trigger
             * @description Summarize past this many actions.
             */
            trigger?: number | null;
            /**
             * Keep
             * @description Recent actions kept in full.
             */
            keep?: number | null;
            /** Observation Chars */
            observation_chars?: number | null;
            /** Large Chars */
            large_chars?: number | null;
            /** Large Trigger */
            large_trigger?: number | null;
            /** Large Keep */
            large_keep?: number | null;
            /** Min Llm Chars */
            min_llm_chars?: number | null;
            /** Min Saving */
            min_saving?: number | null;
            /**
             * Mode
             * @default auto
             * @enum {string}
             */
            mode?: "auto" | "fast" | "deep";
            /**
             * Budget Tokens
             * @description The most tokens the output text may have: above it the trace is summarized whatever the trigger says, and when the summary and the recent actions would pass it, the recent observations are cut shorter, then the oldest recent actions join the summary, then the summary's lines are cut. 422 when even that is past it.
             */
            budget_tokens?: number | null;
            /** Synthesis Provider */
            synthesis_provider?: string | null;
            /** Synthesis Model */
            synthesis_model?: string | null;
            /** Synthesis Temperature */
            synthesis_temperature?: number | null;
            /**
             * On Llm Error
             * @default fallback
             * @enum {string}
             */
            on_llm_error?: "fallback" | "error";
            /**
             * Force Refresh
             * @description Skip the cached LLM result, if any.
             * @default false
             */
            force_refresh?: boolean;
        };
        /** SummarizeTraceResponse */
        SummarizeTraceResponse: {
            /**
             * Scratchpad
             * @description The summary block, then the recent actions.
             */
            scratchpad: string;
            /**
             * Strategy
             * @enum {string}
             */
            strategy: "none" | "deterministic" | "llm" | "truncation";
            /** Reason */
            reason: string;
            /** Mode */
            mode: string;
            /** Degraded */
            degraded: boolean;
            /** Fallback Reason */
            fallback_reason: string | null;
            llm: components["schemas"]["LLMUsageOut"] | null;
            cache: components["schemas"]["CacheOut"];
            /** Groups */
            groups: components["schemas"]["GroupOut"][];
            /** Recent */
            recent: {
                [key: string]: unknown;
            }[];
            /** @description The older actions' handle for /expand, and the facts they held that the summary lost. */
            receipt: components["schemas"]["ReceiptOut"];
            stats: components["schemas"]["TraceStatsOut"];
        };
        /**
         * SynthesizeRequest
         * @description Send exactly one of 'messages', 'contents', 'input'.
         * @example {
         *       "iteration": 1,
         *       "max_iterations": 20,
         *       "messages": [
         *         {
         *           "content": "You are a coding agent. Use the tools to fix the bug.",
         *           "role": "system"
         *         },
         *         {
         *           "content": "Fix the failing test in tests/test_dates.py.",
         *           "role": "user"
         *         },
         *         {
         *           "role": "assistant",
         *           "tool_calls": [
         *             {
         *               "function": {
         *                 "arguments": "{\"command\": \"pytest -x -q\"}",
         *                 "name": "bash"
         *               },
         *               "id": "call_1",
         *               "type": "function"
         *             }
         *           ]
         *         },
         *         {
         *           "content": "FAILED tests/test_dates.py::test_parse - ValueError: bad month 13",
         *           "role": "tool",
         *           "tool_call_id": "call_1"
         *         }
         *       ],
         *       "model": "gpt-4o-mini",
         *       "reasoning": {
         *         "synthesis": "fast"
         *       },
         *       "required_tools": [
         *         "bash"
         *       ]
         *     }
         * @example {
         *       "messages": [
         *         {
         *           "content": "Fix the failing test.",
         *           "role": "user"
         *         },
         *         {
         *           "content": [
         *             {
         *               "id": "toolu_1",
         *               "input": {
         *                 "command": "pytest -x -q"
         *               },
         *               "name": "bash",
         *               "type": "tool_use"
         *             }
         *           ],
         *           "role": "assistant"
         *         },
         *         {
         *           "content": [
         *             {
         *               "content": "1 failed",
         *               "is_error": true,
         *               "tool_use_id": "toolu_1",
         *               "type": "tool_result"
         *             }
         *           ],
         *           "role": "user"
         *         }
         *       ],
         *       "system": "You are a coding agent.",
         *       "tier": "large"
         *     }
         * @example {
         *       "contents": [
         *         {
         *           "parts": [
         *             {
         *               "text": "Fix the failing test."
         *             }
         *           ],
         *           "role": "user"
         *         },
         *         {
         *           "parts": [
         *             {
         *               "functionCall": {
         *                 "args": {
         *                   "command": "pytest -x -q"
         *                 },
         *                 "name": "bash"
         *               }
         *             }
         *           ],
         *           "role": "model"
         *         },
         *         {
         *           "parts": [
         *             {
         *               "functionResponse": {
         *                 "name": "bash",
         *                 "response": {
         *                   "output": "1 failed"
         *                 }
         *               }
         *             }
         *           ],
         *           "role": "user"
         *         }
         *       ],
         *       "model": "gemini-2.5-flash",
         *       "systemInstruction": {
         *         "parts": [
         *           {
         *             "text": "You are a coding agent."
         *           }
         *         ]
         *       }
         *     }
         * @example {
         *       "input": [
         *         {
         *           "content": "Fix the failing test.",
         *           "role": "user"
         *         },
         *         {
         *           "arguments": "{\"command\": \"pytest -x -q\"}",
         *           "call_id": "call_1",
         *           "name": "bash",
         *           "type": "function_call"
         *         },
         *         {
         *           "call_id": "call_1",
         *           "output": "1 failed",
         *           "type": "function_call_output"
         *         }
         *       ],
         *       "instructions": "You are a coding agent.",
         *       "model": "gpt-5"
         *     }
         */
        SynthesizeRequest: {
            /**
             * Messages
             * @description OpenAI Chat Completions or Anthropic messages.
             */
            messages?: {
                [key: string]: unknown;
            }[] | null;
            /**
             * System
             * @description Anthropic: the top-level system prompt.
             */
            system?: string | {
                [key: string]: unknown;
            }[] | null;
            /**
             * Contents
             * @description Gemini: the conversation's contents.
             */
            contents?: {
                [key: string]: unknown;
            }[] | null;
            /**
             * Systeminstruction
             * @description Gemini: the system instruction (also taken as system_instruction, the REST API's snake_case spelling, and given back under the key it came in).
             */
            systemInstruction?: {
                [key: string]: unknown;
            } | null;
            /**
             * Input
             * @description OpenAI Responses: the input items.
             */
            input?: string | {
                [key: string]: unknown;
            }[] | null;
            /**
             * Instructions
             * @description OpenAI Responses: the instructions.
             */
            instructions?: string | null;
            /**
             * Format
             * @description auto, openai, anthropic, gemini or responses.
             * @default auto
             */
            format?: string;
            /**
             * Model
             * @description The agent's model; used to infer the tier.
             */
            model?: string | null;
            /** @description Overrides the tier inferred from the model. */
            tier?: components["schemas"]["Tier"] | null;
            /**
             * Task
             * @description The task, as deep summaries and signals.task read it; defaults to the first user message.
             */
            task?: string | null;
            /** Iteration */
            iteration?: number | null;
            /** Max Iterations */
            max_iterations?: number | null;
            /** Required Tools */
            required_tools?: string[];
            /**
             * Output Tools
             * @description Tools that create the deliverable; default: names that write, create, save, send, submit or commit.
             */
            output_tools?: string[] | null;
            /**
             * Strategy
             * @default reactive
             * @enum {string}
             */
            strategy?: "reactive" | "planExecute" | "treeOfThought" | "reflexion" | "adaptive";
            reasoning?: components["schemas"]["Reasoning"];
            /**
             * Steer
             * @description Append the phase nudge as the last user message when the compaction saved more than the nudge costs: the messages never grow. The nudge is in the response either way (mode off leaves the messages untouched).
             * @default true
             */
            steer?: boolean;
            /**
             * On Llm Error
             * @description When the LLM fails in deep mode: fall back to fast and say so (degraded), or answer 502/504.
             * @default fallback
             * @enum {string}
             */
            on_llm_error?: "fallback" | "error";
            /**
             * Force Refresh
             * @description Skip the cached LLM result, if any.
             * @default false
             */
            force_refresh?: boolean;
            /**
             * Cache Breakpoints
             * @description Anthropic requests only: mark the ends of the stable and steady prefixes (see 'prefix' in the response) with cache_control breakpoints, keeping the caller's own and at most 4 in all.
             * @default false
             */
            cache_breakpoints?: boolean;
            /**
             * Budget Tokens
             * @description The most tokens the output may have (every mode but off). Past it the oldest turns condense into one digest, and a newest turn larger than it has its results cut, with handles. Without it, the output is capped at CONTEXTSYNTH_BUDGET_SHARE of the model's window when the model's window is known. 422 when the system prompt, the task and the newest user message alone are past it.
             */
            budget_tokens?: number | null;
            /**
             * Trigger Tokens
             * @description At or below this many input tokens the messages go back exactly as sent (compacted: false, no nudge).
             */
            trigger_tokens?: number | null;
        };
        /** SynthesizeResponse */
        SynthesizeResponse: {
            /** Messages */
            messages?: {
                [key: string]: unknown;
            }[] | null;
            /** System */
            system?: string | {
                [key: string]: unknown;
            }[] | null;
            /** Contents */
            contents?: {
                [key: string]: unknown;
            }[] | null;
            /** Systeminstruction */
            systemInstruction?: {
                [key: string]: unknown;
            } | null;
            /** Input */
            input?: {
                [key: string]: unknown;
            }[] | string | null;
            /** Instructions */
            instructions?: string | null;
            /** Format */
            format: string;
            /** Compacted */
            compacted: boolean;
            /** Mode */
            mode: string;
            /** Requested Mode */
            requested_mode: string;
            /** Mode Reason */
            mode_reason: string;
            /**
             * Degraded
             * @description An LLM mode failed and a deterministic one ran.
             */
            degraded: boolean;
            /** Fallback Reason */
            fallback_reason: string | null;
            /** @description The LLM call made, if any. */
            llm: components["schemas"]["LLMUsageOut"] | null;
            /** Phase */
            phase: string;
            /** Nudge */
            nudge: string | null;
            tier: components["schemas"]["Tier"];
            /**
             * Tier Source
             * @enum {string}
             */
            tier_source: "request" | "model" | "default";
            signals: components["schemas"]["SignalsOut"];
            stats: components["schemas"]["StatsOut"];
            receipt: components["schemas"]["ReceiptOut"];
            cache: components["schemas"]["CacheOut"];
            prefix: components["schemas"]["PrefixOut"];
            /** Resolved Config */
            resolved_config: {
                [key: string]: components["schemas"]["ResolvedField"];
            };
        };
        /**
         * Tier
         * @enum {string}
         */
        Tier: "local" | "mid" | "large" | "frontier";
        /** TraceStatsOut */
        TraceStatsOut: {
            /** Chars Before */
            chars_before: number;
            /** Chars After */
            chars_after: number;
            /** Tokens Before */
            tokens_before: number;
            /** Tokens After */
            tokens_after: number;
            /** Reduction */
            reduction: number;
            /** Actions Total */
            actions_total: number;
            /** Actions Summarized */
            actions_summarized: number;
        };
        /** ValidationError */
        ValidationError: {
            /** Location */
            loc: (string | number)[];
            /** Message */
            msg: string;
            /** Error Type */
            type: string;
            /** Input */
            input?: unknown;
            /** Context */
            ctx?: Record<string, never>;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    synthesize: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SynthesizeRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SynthesizeResponse"];
                };
            };
            /** @description The body is empty, not valid JSON, not UTF-8, nested deeper than the depth limit, or broken gzip. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description API keys are configured and none valid was sent. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such handle for this tenant (or it expired). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is over the size limit (after gzip decoding), or has too many messages (or actions, tool calls, earlier records, memories), or a message or text over its limit (limit-exceeded, naming the setting in 'limit'), or more tokens than the tenant's token limit can ever admit (too-many-tokens). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is declared as another media type than JSON, or in an encoding other than gzip. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The transcript, its format or an option is invalid. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The tenant's rate limit is reached (rate-limited, with Retry-After). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A strategy broke the output invariants. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM provider failed (on_llm_error: error). */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The mode needs an LLM and none is configured, or calls to the provider are paused after repeated failures (llm-circuit-open, with Retry-After), or the worker runs as many large requests as its memory holds (overloaded, with Retry-After). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM time budget ran out (on_llm_error: error). */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    compress_history: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CompressHistoryRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CompressHistoryResponse"];
                };
            };
            /** @description The body is empty, not valid JSON, not UTF-8, nested deeper than the depth limit, or broken gzip. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description API keys are configured and none valid was sent. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such handle for this tenant (or it expired). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is over the size limit (after gzip decoding), or has too many messages (or actions, tool calls, earlier records, memories), or a message or text over its limit (limit-exceeded, naming the setting in 'limit'), or more tokens than the tenant's token limit can ever admit (too-many-tokens). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is declared as another media type than JSON, or in an encoding other than gzip. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The transcript, its format or an option is invalid. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The tenant's rate limit is reached (rate-limited, with Retry-After). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A strategy broke the output invariants. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM provider failed (on_llm_error: error). */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The mode needs an LLM and none is configured, or calls to the provider are paused after repeated failures (llm-circuit-open, with Retry-After), or the worker runs as many large requests as its memory holds (overloaded, with Retry-After). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM time budget ran out (on_llm_error: error). */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    summarize_trace: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SummarizeTraceRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SummarizeTraceResponse"];
                };
            };
            /** @description The body is empty, not valid JSON, not UTF-8, nested deeper than the depth limit, or broken gzip. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description API keys are configured and none valid was sent. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such handle for this tenant (or it expired). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is over the size limit (after gzip decoding), or has too many messages (or actions, tool calls, earlier records, memories), or a message or text over its limit (limit-exceeded, naming the setting in 'limit'), or more tokens than the tenant's token limit can ever admit (too-many-tokens). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is declared as another media type than JSON, or in an encoding other than gzip. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The transcript, its format or an option is invalid. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The tenant's rate limit is reached (rate-limited, with Retry-After). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A strategy broke the output invariants. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM provider failed (on_llm_error: error). */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The mode needs an LLM and none is configured, or calls to the provider are paused after repeated failures (llm-circuit-open, with Retry-After), or the worker runs as many large requests as its memory holds (overloaded, with Retry-After). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM time budget ran out (on_llm_error: error). */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    rescue: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RescueRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RescueResponse"];
                };
            };
            /** @description The body is empty, not valid JSON, not UTF-8, nested deeper than the depth limit, or broken gzip. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description API keys are configured and none valid was sent. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such handle for this tenant (or it expired). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is over the size limit (after gzip decoding), or has too many messages (or actions, tool calls, earlier records, memories), or a message or text over its limit (limit-exceeded, naming the setting in 'limit'), or more tokens than the tenant's token limit can ever admit (too-many-tokens). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is declared as another media type than JSON, or in an encoding other than gzip. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The transcript, its format or an option is invalid. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The tenant's rate limit is reached (rate-limited, with Retry-After). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A strategy broke the output invariants. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM provider failed (on_llm_error: error). */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The mode needs an LLM and none is configured, or calls to the provider are paused after repeated failures (llm-circuit-open, with Retry-After), or the worker runs as many large requests as its memory holds (overloaded, with Retry-After). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM time budget ran out (on_llm_error: error). */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    expand: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                handle: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExpandResponse"];
                };
            };
            /** @description API keys are configured and none valid was sent. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such handle for this tenant (or it expired). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["HTTPValidationError"];
                };
            };
            /** @description The handle store (Redis) cannot be reached and this replica does not hold the handle; retry after Retry-After seconds. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    summarize_recall: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SummarizeRecallRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SummarizeRecallResponse"];
                };
            };
            /** @description The body is empty, not valid JSON, not UTF-8, nested deeper than the depth limit, or broken gzip. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description API keys are configured and none valid was sent. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such handle for this tenant (or it expired). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is over the size limit (after gzip decoding), or has too many messages (or actions, tool calls, earlier records, memories), or a message or text over its limit (limit-exceeded, naming the setting in 'limit'), or more tokens than the tenant's token limit can ever admit (too-many-tokens). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is declared as another media type than JSON, or in an encoding other than gzip. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The transcript, its format or an option is invalid. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The tenant's rate limit is reached (rate-limited, with Retry-After). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A strategy broke the output invariants. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM provider failed (on_llm_error: error). */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The mode needs an LLM and none is configured, or calls to the provider are paused after repeated failures (llm-circuit-open, with Retry-After), or the worker runs as many large requests as its memory holds (overloaded, with Retry-After). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM time budget ran out (on_llm_error: error). */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    reflect: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReflectRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReflectResponse"];
                };
            };
            /** @description The body is empty, not valid JSON, not UTF-8, nested deeper than the depth limit, or broken gzip. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description API keys are configured and none valid was sent. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No such handle for this tenant (or it expired). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body did not arrive within the body timeout. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is over the size limit (after gzip decoding), or has too many messages (or actions, tool calls, earlier records, memories), or a message or text over its limit (limit-exceeded, naming the setting in 'limit'), or more tokens than the tenant's token limit can ever admit (too-many-tokens). */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is declared as another media type than JSON, or in an encoding other than gzip. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The transcript, its format or an option is invalid. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The tenant's rate limit is reached (rate-limited, with Retry-After). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A strategy broke the output invariants. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM provider failed (on_llm_error: error). */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The mode needs an LLM and none is configured, or calls to the provider are paused after repeated failures (llm-circuit-open, with Retry-After), or the worker runs as many large requests as its memory holds (overloaded, with Retry-After). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The LLM time budget ran out (on_llm_error: error). */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
    readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}

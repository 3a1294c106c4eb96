import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.list_flow_responses_response import ListFlowResponsesResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    flow_id: str | Unset = UNSET,
    flow_token: str | Unset = UNSET,
    message_id: str | Unset = UNSET,
    received_after: datetime.datetime | Unset = UNSET,
    received_before: datetime.datetime | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["page_size"] = page_size

    params["page_token"] = page_token

    params["flow_id"] = flow_id

    params["flow_token"] = flow_token

    params["message_id"] = message_id

    json_received_after: str | Unset = UNSET
    if not isinstance(received_after, Unset):
        json_received_after = received_after.isoformat()
    params["received_after"] = json_received_after

    json_received_before: str | Unset = UNSET
    if not isinstance(received_before, Unset):
        json_received_before = received_before.isoformat()
    params["received_before"] = json_received_before

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/flow_responses",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ListFlowResponsesResponse:
    if response.status_code == 200:
        response_200 = ListFlowResponsesResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())

        return response_503

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | ListFlowResponsesResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    flow_id: str | Unset = UNSET,
    flow_token: str | Unset = UNSET,
    message_id: str | Unset = UNSET,
    received_after: datetime.datetime | Unset = UNSET,
    received_before: datetime.datetime | Unset = UNSET,
) -> Response[Error | ListFlowResponsesResponse]:
    """Lists the workspace's flow responses, newest first by received_at.

     Lists the workspace's flow responses, newest first by received_at. A
    response is listed once its files are stored or have their error (when
    flow.completed fires).

    Scope: `flow_responses:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        flow_id (str | Unset):
        flow_token (str | Unset):
        message_id (str | Unset):
        received_after (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z
        received_before (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListFlowResponsesResponse]
    """

    kwargs = _get_kwargs(
        page_size=page_size,
        page_token=page_token,
        flow_id=flow_id,
        flow_token=flow_token,
        message_id=message_id,
        received_after=received_after,
        received_before=received_before,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    flow_id: str | Unset = UNSET,
    flow_token: str | Unset = UNSET,
    message_id: str | Unset = UNSET,
    received_after: datetime.datetime | Unset = UNSET,
    received_before: datetime.datetime | Unset = UNSET,
) -> Error | ListFlowResponsesResponse | None:
    """Lists the workspace's flow responses, newest first by received_at.

     Lists the workspace's flow responses, newest first by received_at. A
    response is listed once its files are stored or have their error (when
    flow.completed fires).

    Scope: `flow_responses:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        flow_id (str | Unset):
        flow_token (str | Unset):
        message_id (str | Unset):
        received_after (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z
        received_before (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListFlowResponsesResponse
    """

    return sync_detailed(
        client=client,
        page_size=page_size,
        page_token=page_token,
        flow_id=flow_id,
        flow_token=flow_token,
        message_id=message_id,
        received_after=received_after,
        received_before=received_before,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    flow_id: str | Unset = UNSET,
    flow_token: str | Unset = UNSET,
    message_id: str | Unset = UNSET,
    received_after: datetime.datetime | Unset = UNSET,
    received_before: datetime.datetime | Unset = UNSET,
) -> Response[Error | ListFlowResponsesResponse]:
    """Lists the workspace's flow responses, newest first by received_at.

     Lists the workspace's flow responses, newest first by received_at. A
    response is listed once its files are stored or have their error (when
    flow.completed fires).

    Scope: `flow_responses:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        flow_id (str | Unset):
        flow_token (str | Unset):
        message_id (str | Unset):
        received_after (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z
        received_before (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListFlowResponsesResponse]
    """

    kwargs = _get_kwargs(
        page_size=page_size,
        page_token=page_token,
        flow_id=flow_id,
        flow_token=flow_token,
        message_id=message_id,
        received_after=received_after,
        received_before=received_before,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    flow_id: str | Unset = UNSET,
    flow_token: str | Unset = UNSET,
    message_id: str | Unset = UNSET,
    received_after: datetime.datetime | Unset = UNSET,
    received_before: datetime.datetime | Unset = UNSET,
) -> Error | ListFlowResponsesResponse | None:
    """Lists the workspace's flow responses, newest first by received_at.

     Lists the workspace's flow responses, newest first by received_at. A
    response is listed once its files are stored or have their error (when
    flow.completed fires).

    Scope: `flow_responses:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        flow_id (str | Unset):
        flow_token (str | Unset):
        message_id (str | Unset):
        received_after (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z
        received_before (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListFlowResponsesResponse
    """

    return (
        await asyncio_detailed(
            client=client,
            page_size=page_size,
            page_token=page_token,
            flow_id=flow_id,
            flow_token=flow_token,
            message_id=message_id,
            received_after=received_after,
            received_before=received_before,
        )
    ).parsed

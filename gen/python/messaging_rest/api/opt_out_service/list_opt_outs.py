import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.list_opt_outs_response import ListOptOutsResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    updated_after: datetime.datetime | Unset = UNSET,
    phone_number: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["page_size"] = page_size

    params["page_token"] = page_token

    json_updated_after: str | Unset = UNSET
    if not isinstance(updated_after, Unset):
        json_updated_after = updated_after.isoformat()
    params["updated_after"] = json_updated_after

    params["phone_number"] = phone_number

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/opt_outs",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ListOptOutsResponse:
    if response.status_code == 200:
        response_200 = ListOptOutsResponse.from_dict(response.json())

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
) -> Response[Error | ListOptOutsResponse]:
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
    updated_after: datetime.datetime | Unset = UNSET,
    phone_number: str | Unset = UNSET,
) -> Response[Error | ListOptOutsResponse]:
    """Lists the numbers on the workspace's opt-out list, most recently changed first.

     Lists the numbers on the workspace's opt-out list, most recently changed
    first. With updated_after, lists every entry changed since then instead,
    those taken off the list (status opted_in) included: an incremental sync.

    Scope: `messages:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        updated_after (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z
        phone_number (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListOptOutsResponse]
    """

    kwargs = _get_kwargs(
        page_size=page_size,
        page_token=page_token,
        updated_after=updated_after,
        phone_number=phone_number,
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
    updated_after: datetime.datetime | Unset = UNSET,
    phone_number: str | Unset = UNSET,
) -> Error | ListOptOutsResponse | None:
    """Lists the numbers on the workspace's opt-out list, most recently changed first.

     Lists the numbers on the workspace's opt-out list, most recently changed
    first. With updated_after, lists every entry changed since then instead,
    those taken off the list (status opted_in) included: an incremental sync.

    Scope: `messages:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        updated_after (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z
        phone_number (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListOptOutsResponse
    """

    return sync_detailed(
        client=client,
        page_size=page_size,
        page_token=page_token,
        updated_after=updated_after,
        phone_number=phone_number,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    updated_after: datetime.datetime | Unset = UNSET,
    phone_number: str | Unset = UNSET,
) -> Response[Error | ListOptOutsResponse]:
    """Lists the numbers on the workspace's opt-out list, most recently changed first.

     Lists the numbers on the workspace's opt-out list, most recently changed
    first. With updated_after, lists every entry changed since then instead,
    those taken off the list (status opted_in) included: an incremental sync.

    Scope: `messages:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        updated_after (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z
        phone_number (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListOptOutsResponse]
    """

    kwargs = _get_kwargs(
        page_size=page_size,
        page_token=page_token,
        updated_after=updated_after,
        phone_number=phone_number,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    updated_after: datetime.datetime | Unset = UNSET,
    phone_number: str | Unset = UNSET,
) -> Error | ListOptOutsResponse | None:
    """Lists the numbers on the workspace's opt-out list, most recently changed first.

     Lists the numbers on the workspace's opt-out list, most recently changed
    first. With updated_after, lists every entry changed since then instead,
    those taken off the list (status opted_in) included: an incremental sync.

    Scope: `messages:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        updated_after (datetime.datetime | Unset): ISO 8601 UTC with milliseconds, for example
            2026-01-31T12:00:00.000Z
        phone_number (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListOptOutsResponse
    """

    return (
        await asyncio_detailed(
            client=client,
            page_size=page_size,
            page_token=page_token,
            updated_after=updated_after,
            phone_number=phone_number,
        )
    ).parsed

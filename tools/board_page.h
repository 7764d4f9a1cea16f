// The fixed text of `runnel board`'s page (tools/board.h): everything
// before and after the <script type="application/json"> element that holds
// the data. No data from event files is ever part of it.
#ifndef RUNNEL_TOOLS_BOARD_PAGE_H_
#define RUNNEL_TOOLS_BOARD_PAGE_H_

namespace runnel {

// <!DOCTYPE html> through the page's fixed HTML and CSS, up to where the
// data goes.
extern const char kBoardPageHead[];
// The drawing script (Note [Board in the browser]) and the end of the page.
extern const char kBoardPageTail[];

}  // namespace runnel

#endif  // RUNNEL_TOOLS_BOARD_PAGE_H_
